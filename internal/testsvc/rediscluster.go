package testsvc

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PrivateRedisCluster is a Redis Cluster a test starts for itself: three
// masters and three replicas of the machine's redis-server on free loopback
// ports, for fault tests that stop nodes (the shared cluster of
// scripts/redis-cluster.sh is never disturbed). Every node is killed when
// the test ends.
type PrivateRedisCluster struct {
	t     testing.TB
	Nodes []*PrivateRedisNode
}

// PrivateRedisNode is one node of a PrivateRedisCluster.
type PrivateRedisNode struct {
	Addr string
	cmd  *exec.Cmd
}

// StartRedisCluster starts a PrivateRedisCluster whose nodes declare a peer
// failed after nodeTimeout (cluster-node-timeout), and returns once every
// node reports cluster_state:ok and every master has a replica in sync.
// Without redis-server it skips, or fails under CI.
func StartRedisCluster(t testing.TB, nodeTimeout time.Duration) *PrivateRedisCluster {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			Missing(t, bin+" is not installed; a private Redis Cluster needs it (scripts/services.sh installs it)")
		}
	}
	c := &PrivateRedisCluster{t: t}
	t.Cleanup(c.killAll)
	dir := t.TempDir()
	args := []string{"--cluster", "create"}
	for i := range 6 {
		port, bus := FreePort(t), FreePort(t)
		n := &PrivateRedisNode{Addr: "127.0.0.1:" + port}
		nd := filepath.Join(dir, strconv.Itoa(i))
		n.cmd = exec.Command("redis-server", "--port", port, "--cluster-port", bus, "--bind", "127.0.0.1",
			"--protected-mode", "no", "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(nd, "nodes.conf"),
			"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
			"--save", "", "--appendonly", "no", "--dir", nd, "--logfile", filepath.Join(nd, "redis.log"))
		if err := os.MkdirAll(nd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := n.cmd.Start(); err != nil {
			t.Fatalf("redis-server: %v", err)
		}
		c.Nodes = append(c.Nodes, n)
		args = append(args, n.Addr)
	}
	for _, n := range c.Nodes {
		c.waitFor(10*time.Second, n.Addr+" listening", func() bool { return accepting(n.Addr) == nil })
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, n := range c.Nodes {
		c.waitFor(20*time.Second, n.Addr+" cluster_state:ok", func() bool {
			return strings.Contains(c.CLI(n.Addr, "cluster", "info"), "cluster_state:ok")
		})
	}
	// The first three addresses are the masters (redis-cli's layout).
	for _, n := range c.Nodes[3:] {
		c.waitFor(20*time.Second, n.Addr+" replica in sync", func() bool {
			return strings.Contains(c.CLI(n.Addr, "info", "replication"), "master_link_status:up")
		})
	}
	return c
}

// Addrs are the seed addresses of every node.
func (c *PrivateRedisCluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// CLI runs redis-cli against the node at addr and returns its output ("" on
// error: a stopped node).
func (c *PrivateRedisCluster) CLI(addr string, args ...string) string {
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "redis-cli", append([]string{"-h", host, "-p", port}, args...)...).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// Role is "master" or "slave" as the node at addr reports it ("" when it
// does not answer).
func (c *PrivateRedisCluster) Role(addr string) string {
	first, _, _ := strings.Cut(c.CLI(addr, "role"), "\n")
	return strings.TrimSpace(first)
}

// Kill stops the node at addr at once (SIGKILL): no shutdown, no save.
func (c *PrivateRedisCluster) Kill(addr string) {
	for _, n := range c.Nodes {
		if n.Addr == addr && n.cmd != nil {
			kill(n.cmd)
			n.cmd = nil
			return
		}
	}
	c.t.Fatalf("no running node at %s", addr)
}

func (c *PrivateRedisCluster) killAll() {
	for _, n := range c.Nodes {
		if n.cmd != nil {
			kill(n.cmd)
			n.cmd = nil
		}
	}
}

func (c *PrivateRedisCluster) waitFor(d time.Duration, what string, ok func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			c.t.Fatalf("private Redis Cluster: %s not reached within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
