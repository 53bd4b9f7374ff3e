package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// clusterUser is an ACL user made for one test on every node given (a
// cluster's ACLs are per node; one address for the single server), so
// that the connections the routed clients open are told apart from
// everyone else's in CLIENT LIST.
type clusterUser struct {
	name, secret string
	nodes        []*goredis.Client
}

func newClusterUser(t *testing.T, addrs []string) *clusterUser {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	u := &clusterUser{name: "twpins" + hex.EncodeToString(b), secret: "s" + hex.EncodeToString(b)}
	ctx := context.Background()
	for _, a := range addrs {
		n := goredis.NewClient(&goredis.Options{Addr: a})
		u.nodes = append(u.nodes, n)
		if err := n.Do(ctx, "ACL", "SETUSER", u.name, "on", ">"+u.secret, "~*", "&*", "+@all").Err(); err != nil {
			t.Fatalf("ACL SETUSER on %s: %v", a, err)
		}
	}
	t.Cleanup(func() {
		for _, n := range u.nodes {
			_ = n.Do(context.Background(), "ACL", "DELUSER", u.name).Err()
			_ = n.Close()
		}
	})
	return u
}

// worstCase is the smallest connection budget at which mod(budget)
// wires: the module's worst-case connection count.
func worstCase(t *testing.T, mod func(budget int) fx.Option) int {
	t.Helper()
	for b := 1; b <= 1<<20; b *= 2 {
		if err := fx.New(fx.NopLogger, mod(b)).Err(); err == nil {
			lo := b/2 + 1 // b/2 was refused (or b is 1)
			for lo < b {
				mid := (lo + b) / 2
				if fx.New(fx.NopLogger, mod(mid)).Err() == nil {
					b = mid
				} else {
					lo = mid + 1
				}
			}
			return b
		} else if tenancy.CodeOf(err) != tenancy.CodeConnectionBudgetExceeded {
			t.Fatalf("budget %d: %v", b, err)
		}
	}
	t.Fatal("no budget up to 2^20 wires")
	return 0
}

// waitGone waits up to five seconds for no goroutine to run fn.
func waitGone(t *testing.T, fn string) {
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !strings.Contains(string(buf[:runtime.Stack(buf, true)]), fn) {
			return
		}
	}
	t.Errorf("goroutines running %s outlived their client", fn)
}

// conns counts the user's connections on every node, and on how many
// nodes it has any.
func (u *clusterUser) conns(t *testing.T) (total, nodes int) {
	for _, n := range u.nodes {
		list, err := n.ClientList(context.Background()).Result()
		if err != nil {
			t.Errorf("CLIENT LIST: %v", err)
			return 0, 0
		}
		if c := strings.Count(list, " user="+u.name+" "); c > 0 {
			total += c
			nodes++
		}
	}
	return total, nodes
}

// nodeConns counts, on the client side, the connections a gated cluster
// client holds on each node: the peak of all of them, and of the nodes
// holding any.
type nodeConns struct {
	mu                   sync.Mutex
	open                 map[string]int
	peakConns, peakNodes int
	total                int
	dials                int // connections ever made
}

func (n *nodeConns) add(addr string, d int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.open[addr] += d; n.open[addr] == 0 {
		delete(n.open, addr)
	}
	n.total += d
	if d > 0 {
		n.dials += d
	}
	n.peakConns, n.peakNodes = max(n.peakConns, n.total), max(n.peakNodes, len(n.open))
}

// countNodeConns counts the gated cluster clients' connections until the
// test ends.
func countNodeConns(t *testing.T) *nodeConns {
	n := &nodeConns{open: map[string]int{}}
	t.Cleanup(redis.WrapNodeDial(func(dial func(context.Context, string, string) (net.Conn, error)) func(context.Context, string, string) (net.Conn, error) {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			n.add(addr, 1)
			return &countedConn{Conn: c, done: sync.OnceFunc(func() { n.add(addr, -1) })}, nil
		}
	}))
	return n
}

type countedConn struct {
	net.Conn
	done func()
}

func (c *countedConn) Close() error { c.done(); return c.Conn.Close() }

// load is what clusterLoad measured: the peak of the user's connections
// and of the nodes holding them, counted on every node, and the calls'
// errors.
type load struct {
	conns, nodes int
	errs         []error
}

// clusterLoad starts an app of one routed counter route on the test
// cluster, as u, and runs each tenant's increments over keys keys (on
// every master) concurrently; the app stops before it returns.
func clusterLoad(t *testing.T, u *clusterUser, addrs []string, rc redis.RoutedConfig, budget, tenants, keys int) load {
	t.Helper()
	resolve := func(context.Context, tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: strings.Join(addrs, ","), User: u.name, Secret: u.secret}, nil
	}
	name := "budget-" + u.name
	var c *redis.Counter
	app := fx.New(fx.NopLogger, redis.Module("m", redis.Routed(resolve, rc), modules.ConnBudget(budget), redis.CounterRoute(name, redis.RouteConfig{})),
		fx.Invoke(fx.Annotate(func(v *redis.Counter) { c = v }, fx.ParamTags(`name:"`+name+`"`))))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	stop := make(chan struct{})
	peaks := make(chan load)
	go func() {
		var top load
		for {
			n, k := u.conns(t)
			top.conns, top.nodes = max(top.conns, n), max(top.nodes, k)
			select {
			case <-stop:
				peaks <- top
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range tenants {
		wg.Go(func() {
			ctx := tenancy.WithTenant(context.Background(), tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+300)))
			for k := range keys {
				if _, err := c.Add(ctx, fmt.Sprint("k", k), 1); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	time.Sleep(20 * time.Millisecond)
	close(stop)
	l := <-peaks
	l.errs = errs
	return l
}

// TestRoutedClusterBudgetCountsEveryNode: a routed client on a cluster
// endpoint keeps a pool on every node it talks to, so the worst case a
// ConnBudget is checked against counts MaxConnsPerClient on each of
// ClusterNodes nodes. For one client of one connection per node on the
// test cluster's six nodes, the smallest budget fx.New accepts is six; at
// that budget, under load from eight tenants over keys on every master,
// the client never holds more connections than that: counted exactly on
// the client side, and on each node by the client's ACL user (where a
// closed connection may linger a moment, hence the allowance there).
func TestRoutedClusterBudgetCountsEveryNode(t *testing.T) {
	addrs := testsvc.RedisCluster(t)
	u := newClusterUser(t, addrs)
	dialed := countNodeConns(t)
	rc := redis.RoutedConfig{Limits: routing.Limits{MaxClients: 1, MaxConnsPerClient: 1, MaxWait: time.Minute}, ClusterNodes: len(addrs)}
	resolve := func(context.Context, tenancy.ID) (routing.Credentials, error) { return routing.Credentials{}, nil }
	budget := worstCase(t, func(b int) fx.Option {
		return redis.Module("m", redis.Routed(resolve, rc), modules.ConnBudget(b), redis.CounterRoute("c", redis.RouteConfig{}))
	})
	l := clusterLoad(t, u, addrs, rc, budget, 8, 40)
	t.Logf("budget %d; peak %d connections dialed, %d on %d nodes in CLIENT LIST", budget, dialed.peakConns, l.conns, l.nodes)
	if len(l.errs) > 0 {
		t.Fatalf("%d calls failed, the first: %v", len(l.errs), l.errs[0])
	}
	if dialed.peakConns > budget || l.conns > 2*budget {
		t.Errorf("peak %d connections dialed, %d in CLIENT LIST, for a budget of %d", dialed.peakConns, l.conns, budget)
	}
	if budget != len(addrs) {
		t.Errorf("worst case %d for one client of one connection on each of %d nodes", budget, len(addrs))
	}
}

// TestRoutedClusterNodesHeld: the default Open holds a cluster client to
// ClusterNodes nodes. With two declared on the six-node test cluster, the
// client never has connections on a third node (counted on the client
// side), and calls for slots it cannot reach fail with
// connection_budget_exhausted. With a ConnBudget and no ClusterNodes, a
// cluster endpoint is refused (connection_budget_exceeded) before any
// connection is made.
func TestRoutedClusterNodesHeld(t *testing.T) {
	addrs := testsvc.RedisCluster(t)
	u := newClusterUser(t, addrs)
	dialed := countNodeConns(t)
	l := clusterLoad(t, u, addrs, redis.RoutedConfig{Limits: routing.Limits{MaxClients: 1, MaxConnsPerClient: 1, MaxWait: time.Minute}, ClusterNodes: 2}, 2, 1, 12)
	// go-redis retries a refused node's dial every second until its pool
	// closes: wait for those goroutines to end (the package checks leaks).
	t.Cleanup(func() { waitGone(t, "pool.(*ConnPool).tryDial") })
	t.Logf("peak %d connections on %d nodes dialed; %d of 12 calls refused", dialed.peakConns, dialed.peakNodes, len(l.errs))
	if dialed.peakNodes > 2 || dialed.peakConns > 2 {
		t.Errorf("peak %d connections on %d nodes for two declared nodes of one connection", dialed.peakConns, dialed.peakNodes)
	}
	if len(l.errs) == 0 {
		t.Fatal("every call succeeded with two nodes of six")
	}
	for _, err := range l.errs {
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeConnectionBudgetExhausted || te.Module != "m" || te.Backend != "redis" {
			t.Fatalf("a call past the declared nodes: %v", err)
		}
	}

	// A user of its own: the server may list the first load's closed
	// connections a moment longer.
	dialed.mu.Lock()
	before := dialed.dials
	dialed.mu.Unlock()
	l = clusterLoad(t, newClusterUser(t, addrs), addrs, redis.RoutedConfig{Limits: routing.Limits{MaxClients: 1, MaxConnsPerClient: 1}}, 1, 2, 3)
	dialed.mu.Lock()
	after := dialed.dials
	dialed.mu.Unlock()
	if l.conns != 0 || after != before || len(l.errs) != 2*3 {
		t.Fatalf("a cluster endpoint on a one-node budget: %d connections dialed, %d in CLIENT LIST, %d of 6 calls refused", after-before, l.conns, len(l.errs))
	}
	var te *tenancy.Error
	if !errors.As(l.errs[0], &te) || te.Code != tenancy.CodeConnectionBudgetExceeded || te.Module != "m" || !strings.Contains(te.Fix, "ClusterNodes") {
		t.Fatalf("a cluster endpoint on a one-node budget: %v", l.errs[0])
	}
}
