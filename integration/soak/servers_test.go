package soak_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/tenantwire/tenantwire/internal/testsvc"
)

// The soak restarts its servers, so it runs servers of its own: restarting
// the shared test servers would break the tests running beside it.

func missing(t *testing.T, what string) {
	t.Helper()
	testsvc.Missing(t, what+" is not installed; the soak runs private servers (scripts/services.sh installs them)")
}

// privatePG is a PostgreSQL 15 cluster of the soak's own: initdb and the
// postmaster run as the postgres user, in a temporary directory, on a free
// port. The postmaster is this process's child and dies with it
// (Pdeathsig), so a soak killed by its timeout leaves no server behind.
type privatePG struct {
	t    *testing.T
	dir  string
	port string
	db   string // the database plainURL and url name
	cred *syscall.Credential
	cmd  *exec.Cmd
	done chan struct{}
}

const pgBin = "/usr/lib/postgresql/15/bin"

// memDir is where the private clusters keep their data: in memory
// (/dev/shm) where the machine has it. The data is thrown away, and on a
// loaded machine's disk the fifty CREATE DATABASE of the dedicated leg
// alone took 20 to 30 seconds, against 4 in memory. A bound on the WAL
// (see start) keeps its size small.
func memDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "tenantwire-soak-probe-"); err == nil {
			f.Close()
			_ = os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return "" // the default temporary directory
}

// startPrivatePGs starts n private clusters at once (initdb is the slow
// part), the first with the databases the soak's plain modules and
// FerretDB use; the others serve the dedicated leg's tenant databases.
func startPrivatePGs(t *testing.T, n int) []*privatePG {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pgBin, "postgres")); err != nil {
		missing(t, "PostgreSQL 15 ("+pgBin+")")
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		missing(t, "the postgres user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	pgs := make([]*privatePG, n)
	for i := range pgs {
		dir, err := os.MkdirTemp(memDir(), "tenantwire-soak-pg-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		p := &privatePG{t: t, dir: dir, port: testsvc.FreePort(t), db: "postgres", cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		t.Cleanup(func() {
			p.stop(syscall.SIGQUIT) // immediate: the data is thrown away
			_ = os.RemoveAll(dir)
		})
		pgs[i] = p
	}
	tmpl, err := clusterTemplate(pgs[0].cred)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, p := range pgs {
		wg.Go(func() {
			cp := exec.Command("cp", "-a", tmpl, p.data())
			cp.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
			if out, err := cp.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("copying the cluster template: %v\n%s", err, out)
				return
			}
			errs[i] = p.start()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, db := range []string{"soak", "ferretdb"} {
		if err := pgs[0].exec("postgres", "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
	}
	pgs[0].db = "soak"
	return pgs
}

// template is one initdb per test process, in memDir: every private
// cluster starts as a copy of its data directory (initdb takes seconds
// on a loaded machine, a copy a fraction of one). removeTemplate deletes
// it when the process ends.
var template struct {
	mu  sync.Mutex
	dir string
}

func clusterTemplate(cred *syscall.Credential) (string, error) {
	template.mu.Lock()
	defer template.mu.Unlock()
	if template.dir != "" {
		return filepath.Join(template.dir, "data"), nil
	}
	dir, err := os.MkdirTemp(memDir(), "tenantwire-soak-pg-template-")
	if err != nil {
		return "", err
	}
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	initdb := exec.Command(filepath.Join(pgBin, "initdb"), "-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("initdb: %v\n%s", err, out)
	}
	template.dir = dir
	return filepath.Join(dir, "data"), nil
}

func removeTemplate() {
	template.mu.Lock()
	defer template.mu.Unlock()
	if template.dir != "" {
		_ = os.RemoveAll(template.dir)
		template.dir = ""
	}
}

func (p *privatePG) command(prog string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(pgBin, prog), args...)
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func (p *privatePG) data() string { return filepath.Join(p.dir, "data") }

// start runs the postmaster and waits until it accepts connections.
func (p *privatePG) start() error {
	log, err := os.OpenFile(filepath.Join(p.dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	// A clean shutdown (SIGINT, "fast") writes everything out, so fsync
	// buys the soak nothing but disk load on a shared machine.
	cmd := p.command("postgres", "-D", p.data(), "-p", p.port, "-k", p.dir, "-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=200", "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_wal_size=256MB")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", p.port))
		cancel()
		if err == nil {
			c.Close(context.Background())
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("postgres exited at start (see %s/log): %v", p.dir, err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after 60s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop signals the postmaster (SIGINT: fast shutdown, sessions
// terminated and the data written out; SIGQUIT: immediate) and waits.
func (p *privatePG) stop(sig syscall.Signal) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
}

func (p *privatePG) exec(db, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%s/%s?sslmode=disable", p.port, db))
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, stmt)
	return err
}

// url is a DSN for the server's database under an application name (which
// the connection sampler groups by) and a pool bound.
func (p *privatePG) url(app string, maxConns int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%s/%s?sslmode=disable&application_name=%s&pool_max_conns=%d", p.port, p.db, app, maxConns)
}

// plainURL is a DSN for a single connection (no pool settings).
func (p *privatePG) plainURL(app string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%s/%s?sslmode=disable&application_name=%s", p.port, p.db, app)
}

// restart stops the server (fast: sessions are terminated, the data is
// written out) and starts it again, as pg_ctl restart -m fast does.
func (p *privatePG) restart() error {
	p.stop(syscall.SIGINT)
	return p.start()
}

// broker is the short run's Kafka: an in-process broker (kfake), which
// starts in milliseconds. The long run's is a real cluster
// (cluster_test.go).
type broker struct {
	addr    string
	cluster *kfake.Cluster
}

func startBroker(t *testing.T) *broker {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return &broker{addr: c.ListenAddrs()[0], cluster: c}
}

// startFerretDB runs FerretDB in process on a free port, storing in a
// database of the private PostgreSQL (its SQLite backend, pure Go, is
// far too slow under the race detector for a soak).
func startFerretDB(t *testing.T, pg *privatePG) string {
	t.Helper()
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:      ferretdb.ListenerConfig{TCP: "127.0.0.1:" + testsvc.FreePort(t)},
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
	// A bounded pool: the driver would otherwise open up to 100
	// connections (each with goroutines on both ends, in this process).
	return f.MongoDBURI() + "?maxPoolSize=" + strconv.Itoa(mongoConns) // the TCP listener's URI has no query
}
