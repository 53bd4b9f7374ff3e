package soak_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/tenantwire/tenantwire/internal/testsvc"
)

// The soak restarts its servers, so it runs servers of its own: restarting
// the shared test servers would break the tests running beside it.

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func missing(t *testing.T, what string) {
	t.Helper()
	msg := what + " is not installed; the soak runs private servers (scripts/services.sh installs them)"
	if testsvc.Required() {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED: " + msg)
}

// privatePG is a PostgreSQL 15 cluster of the soak's own (initdb and
// pg_ctl as the postgres user, in a temporary directory, on a free port).
type privatePG struct {
	t    *testing.T
	bin  string
	dir  string
	port string
}

const pgBin = "/usr/lib/postgresql/15/bin"

func startPrivatePG(t *testing.T) *privatePG {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pgBin, "pg_ctl")); err != nil {
		missing(t, "PostgreSQL 15 ("+pgBin+")")
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		missing(t, "runuser")
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		missing(t, "the postgres user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "tenantwire-soak-pg-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	p := &privatePG{t: t, bin: pgBin, dir: dir, port: freePort(t)}
	t.Cleanup(func() {
		_ = p.ctl("stop", "-m", "immediate")
		_ = os.RemoveAll(dir)
	})
	if out, err := p.run("initdb", "-D", p.data(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// A clean shutdown (pg_ctl restart -m fast) writes everything out, so
	// fsync buys the soak nothing but disk load on a shared machine.
	opts := fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off -c full_page_writes=off", p.port, dir)
	if err := p.ctl("start", "-o", opts); err != nil {
		t.Fatal(err)
	}
	if out, err := p.run("createdb", "-h", "127.0.0.1", "-p", p.port, "soak"); err != nil {
		t.Fatalf("createdb: %v\n%s", err, out)
	}
	return p
}

func (p *privatePG) data() string { return filepath.Join(p.dir, "data") }

func (p *privatePG) run(prog string, args ...string) ([]byte, error) {
	cmd := exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(p.bin, prog)}, args...)...)
	cmd.Dir = p.dir
	return cmd.CombinedOutput()
}

func (p *privatePG) ctl(action string, args ...string) error {
	out, err := p.run("pg_ctl", append([]string{action, "-D", p.data(), "-w", "-t", "60", "-l", filepath.Join(p.dir, "log")}, args...)...)
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %v\n%s", action, err, out)
	}
	return nil
}

// url is a DSN for the soak database under an application name (which
// the connection sampler groups by) and a pool bound.
func (p *privatePG) url(app string, maxConns int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%s/soak?sslmode=disable&application_name=%s&pool_max_conns=%d", p.port, app, maxConns)
}

// plainURL is a DSN for a single connection (no pool settings).
func (p *privatePG) plainURL(app string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%s/soak?sslmode=disable&application_name=%s", p.port, app)
}

// restart stops the server (fast: sessions are terminated, the data is
// written out) and starts it again.
func (p *privatePG) restart() error { return p.ctl("restart", "-m", "fast") }

// privateRedis is a redis-server of the soak's own, with an fsync-always
// append-only file so an acknowledged write survives a kill.
type privateRedis struct {
	t    *testing.T
	port string
	dir  string
	cmd  *exec.Cmd
}

func startPrivateRedis(t *testing.T) *privateRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		missing(t, "redis-server")
	}
	p := &privateRedis{t: t, port: freePort(t), dir: t.TempDir()}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	return p
}

func (p *privateRedis) addr() string { return "127.0.0.1:" + p.port }

func (p *privateRedis) start() error {
	p.cmd = exec.Command("redis-server", "--port", p.port, "--bind", "127.0.0.1", "--dir", p.dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--protected-mode", "no")
	if err := p.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.addr(), 100*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("private redis-server did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill stops the server this test started, by its process.
func (p *privateRedis) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

// broker is an in-process Kafka broker (kfake) whose listener can be
// taken down: every connection is cut and new ones are refused until it
// comes back. That is a broker outage as its clients see it; the broker's
// log and group offsets survive, as a restarted broker's do (kfake keeps
// them in memory, so closing the cluster itself would lose them).
type broker struct {
	cluster *kfake.Cluster
	mu      sync.Mutex
	down    bool
	conns   map[net.Conn]struct{}
}

func startBroker(t *testing.T) *broker {
	t.Helper()
	b := &broker{conns: map[net.Conn]struct{}{}}
	listen := func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		return &gatedListener{Listener: ln, b: b}, nil
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1), kfake.ListenFn(listen))
	if err != nil {
		t.Fatal(err)
	}
	b.cluster = c
	t.Cleanup(c.Close)
	return b
}

func (b *broker) addr() string { return b.cluster.ListenAddrs()[0] }

// stop cuts every connection and refuses new ones.
func (b *broker) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = true
	for c := range b.conns {
		_ = c.Close()
	}
}

func (b *broker) start() {
	b.mu.Lock()
	b.down = false
	b.mu.Unlock()
}

type gatedListener struct {
	net.Listener
	b *broker
}

func (l *gatedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.b.mu.Lock()
		if l.b.down {
			l.b.mu.Unlock()
			_ = c.Close()
			continue
		}
		tc := &trackedConn{Conn: c, b: l.b}
		l.b.conns[tc] = struct{}{}
		l.b.mu.Unlock()
		return tc, nil
	}
}

type trackedConn struct {
	net.Conn
	b    *broker
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.b.mu.Lock()
		delete(c.b.conns, c)
		c.b.mu.Unlock()
	})
	return c.Conn.Close()
}

// startFerretDB runs FerretDB in process on a free port, storing in a
// database of the private PostgreSQL (its SQLite backend, pure Go, is
// far too slow under the race detector for a soak).
func startFerretDB(t *testing.T, pg *privatePG) string {
	t.Helper()
	if out, err := pg.run("createdb", "-h", "127.0.0.1", "-p", pg.port, "ferretdb"); err != nil {
		t.Fatalf("createdb: %v\n%s", err, out)
	}
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:      ferretdb.ListenerConfig{TCP: "127.0.0.1:" + freePort(t)},
		Handler:       "postgresql",
		PostgreSQLURL: fmt.Sprintf("postgres://postgres@127.0.0.1:%s/ferretdb?sslmode=disable&application_name=soak-ferretdb", pg.port),
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return f.MongoDBURI()
}
