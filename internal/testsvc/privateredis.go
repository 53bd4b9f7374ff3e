package testsvc

import (
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// PrivateRedis is a single redis-server a test starts for itself on a free
// loopback port, for fault tests that kill it (the shared server is never
// disturbed). Its fsync-always append-only file keeps every acknowledged
// write across a kill and a Start.
type PrivateRedis struct {
	Addr string
	port string
	dir  string
	cmd  *exec.Cmd
}

// StartRedis starts a PrivateRedis, killed when the test ends. Without
// redis-server it skips, or fails under CI.
func StartRedis(t testing.TB) *PrivateRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		Missing(t, "redis-server is not installed; a test that kills its Redis runs one of its own (scripts/services.sh installs it)")
	}
	port := FreePort(t)
	p := &PrivateRedis{Addr: "127.0.0.1:" + port, port: port, dir: t.TempDir()}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// Start starts the server (again, after Kill: same port, same data) and
// returns once it accepts connections.
func (p *PrivateRedis) Start() error {
	p.cmd = exec.Command("redis-server", "--port", p.port, "--bind", "127.0.0.1", "--dir", p.dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--protected-mode", "no")
	dieWithTest(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return err
	}
	if err := awaitListening(p.Addr, 10*time.Second); err != nil {
		return fmt.Errorf("private redis-server did not start: %v", err)
	}
	return nil
}

// Kill stops the server by its process (SIGKILL).
func (p *PrivateRedis) Kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	kill(p.cmd)
	p.cmd = nil
}
