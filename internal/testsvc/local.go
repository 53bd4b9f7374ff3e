package testsvc

import (
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"
)

// What every server a test starts for itself (StartRedis, StartRedisCluster,
// StartPgBouncer) shares: a free port, the wait until it listens, the kill.

// accepting is nil when something accepts TCP connections at addr now.
func accepting(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err
}

// awaitListening waits up to d for a server just started to accept
// connections at addr; the error is the last dial's.
func awaitListening(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := accepting(addr)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill stops a server the test started at once (SIGKILL) and reaps it.
func kill(c *exec.Cmd) {
	_ = c.Process.Kill()
	_ = c.Wait()
}

// FreePort is a loopback port nothing listens on now, for a server a test
// starts for itself.
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}
