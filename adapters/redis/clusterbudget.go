package redis

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/tenancy"
)

// nodesPerClient is how many pools of MaxConnsPerClient one routed client
// may hold: a cluster client keeps one on every node it talks to.
func (rc *routedConfig) nodesPerClient() int { return max(rc.ClusterNodes, 1) }

// guardCluster holds a cluster client the default Open builds to what the
// worst case counts: ClusterNodes nodes with connections at once. Without
// ClusterNodes, a module with a ConnBudget counted one node per client,
// so a cluster endpoint is refused rather than let past the budget.
func (rc *routedConfig) guardCluster(o *goredis.UniversalOptions) error {
	if !isCluster(o) {
		return nil
	}
	if rc.ClusterNodes == 0 {
		if !rc.budgeted {
			return nil // no budget claimed: go-redis's own pools, unbounded per node count
		}
		return &tenancy.Error{
			Code: tenancy.CodeConnectionBudgetExceeded, Module: rc.module, Backend: rules.Name,
			Detail: fmt.Sprintf("the tenant's endpoint is a cluster (%d addresses), whose client keeps a pool on every node, "+
				"and the module's ConnBudget counted one node per client; no client was built", len(o.Addrs)),
			Fix: "set redis.RoutedConfig.ClusterNodes to the most nodes (masters and replicas) of a tenant's cluster, and size modules.ConnBudget for it",
		}
	}
	timeout := o.DialTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second // go-redis's default
	}
	dial := goredis.NewDialer(&goredis.Options{DialTimeout: timeout, TLSConfig: o.TLSConfig})
	if wrapNodeDial != nil {
		dial = wrapNodeDial(dial)
	}
	g := &nodeGate{max: rc.ClusterNodes, module: rc.module, live: map[string]int{}, dial: dial}
	o.Dialer = g.dialContext
	return nil
}

// dialFunc dials one connection to addr.
type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// wrapNodeDial, when set, wraps the dialer behind every node gate: the
// tests count a gated client's connections with it. Nil in production.
var wrapNodeDial func(dialFunc) dialFunc

// nodeGate is the dialer of one cluster client: at most max nodes hold
// connections at once. Each node's pool is bounded by PoolSize, so the
// client holds at most MaxConnsPerClient × ClusterNodes connections
// (pub/sub aside, as on a single server). A node whose connections have
// all closed frees its place.
type nodeGate struct {
	max    int
	module string
	dial   dialFunc

	mu   sync.Mutex
	live map[string]int // node address → open connections
}

func (g *nodeGate) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	g.mu.Lock()
	if g.live[addr] == 0 && len(g.live) >= g.max {
		g.mu.Unlock()
		return nil, &tenancy.Error{
			Code: tenancy.CodeConnectionBudgetExhausted, Module: g.module, Backend: rules.Name,
			Detail: fmt.Sprintf("the tenant's cluster client holds connections on %d nodes (redis.RoutedConfig.ClusterNodes), "+
				"and a connection to node %s would be past the connection budget; nothing was sent to it", g.max, addr),
			Fix: "raise redis.RoutedConfig.ClusterNodes to the most nodes (masters and replicas) of a tenant's cluster, and modules.ConnBudget with it",
		}
	}
	g.live[addr]++
	g.mu.Unlock()
	c, err := g.dial(ctx, network, addr)
	if err != nil {
		g.release(addr)
		return nil, err
	}
	gc := gatedConn{Conn: c, release: sync.OnceFunc(func() { g.release(addr) })}
	if sc, ok := c.(syscall.Conn); ok {
		// go-redis checks a pooled connection's health through the socket.
		return &gatedSysConn{gc, sc}, nil
	}
	return &gc, nil
}

func (g *nodeGate) release(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live[addr]--; g.live[addr] <= 0 {
		delete(g.live, addr)
	}
}

type gatedConn struct {
	net.Conn
	release func()
}

func (c *gatedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

type gatedSysConn struct {
	gatedConn
	sys syscall.Conn
}

func (c *gatedSysConn) SyscallConn() (syscall.RawConn, error) { return c.sys.SyscallConn() }
