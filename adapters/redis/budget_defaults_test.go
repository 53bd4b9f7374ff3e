package redis_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRoutedBudgetDefaults: a routed module that leaves MaxConnsPerClient
// (and MaxClients) unset is counted at go-redis's own default pool size,
// 10 per GOMAXPROCS, for each client up to the routing package's default
// bound (and each node of a cluster client). GOMAXPROCS is 3 here, so
// 10 × NumCPU on this machine would not pass.
func TestRoutedBudgetDefaults(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	const perClient = 10 * 3 // goredis.Options.PoolSize's documented default
	resolve := func(context.Context, tenancy.ID) (routing.Credentials, error) { return routing.Credentials{}, nil }
	pools, err := routing.New(routing.Config[int]{Resolve: resolve, TenantKeyed: true,
		Open: func(context.Context, routing.Credentials) (int, error) { return 0, nil }, Close: func(int) {}})
	if err != nil {
		t.Fatal(err)
	}
	clients := pools.MaxClients() // the bound an unset MaxClients gives
	pools.Close()
	for name, c := range map[string]struct {
		rc   redis.RoutedConfig
		want int
	}{
		"default pool":              {redis.RoutedConfig{Limits: routing.Limits{MaxClients: 2}}, 2 * perClient},
		"every default":             {redis.RoutedConfig{}, clients * perClient},
		"default pool per node":     {redis.RoutedConfig{Limits: routing.Limits{MaxClients: 2}, ClusterNodes: 6}, 2 * perClient * 6},
		"set pool, default clients": {redis.RoutedConfig{Limits: routing.Limits{MaxConnsPerClient: 5}}, clients * 5},
	} {
		t.Run(name, func(t *testing.T) {
			got := worstCase(t, func(b int) fx.Option {
				return redis.Module("m", redis.Routed(resolve, c.rc), modules.ConnBudget(b), redis.CacheRoute("c", redis.RouteConfig{}))
			})
			if got != c.want {
				t.Errorf("worst case %d connections, want %d", got, c.want)
			}
		})
	}
}

// TestRoutedDefaultPoolFixedAtNew: the default pool size is read once, at
// fx.New, where the budget counts it: a GOMAXPROCS raised afterwards (the
// runtime follows a container's CPU limit) does not grow the pools past
// the budget. Counted on the test server by the client's ACL user.
func TestRoutedDefaultPoolFixedAtNew(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	e := newEnv(t)
	e.skipOnCluster(t, "it counts one server's connections in CLIENT LIST")
	u := newClusterUser(t, e.addrs) // one node: the single server
	resolve := func(context.Context, tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: e.addrs[0], User: u.name, Secret: u.secret, Params: map[string]string{"db": "13"}}, nil
	}
	rc := redis.RoutedConfig{Limits: routing.Limits{MaxClients: 1}}
	name := e.name("pool")
	budget := worstCase(t, func(b int) fx.Option {
		return redis.Module("m", redis.Routed(resolve, rc), modules.ConnBudget(b), redis.CounterRoute(name, redis.RouteConfig{}))
	})
	var c *redis.Counter
	app := fx.New(fx.NopLogger, redis.Module("m", redis.Routed(resolve, rc), modules.ConnBudget(budget), redis.CounterRoute(name, redis.RouteConfig{})),
		fx.Invoke(fx.Annotate(func(v *redis.Counter) { c = v }, fx.ParamTags(`name:"`+name+`"`))))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	runtime.GOMAXPROCS(4)
	tenant := func(i int) context.Context {
		return tenancy.WithTenant(context.Background(), tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i%8+400)))
	}
	// One call first, so that the load below runs on that one client
	// rather than racing to open it.
	if _, err := c.Add(tenant(0), "n", 1); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	peak := make(chan int)
	go func() {
		top := 0
		for {
			n, _ := u.conns(t)
			top = max(top, n)
			select {
			case <-stop:
				peak <- top
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			ctx := tenant(i)
			for range 30 {
				if _, err := c.Add(ctx, "n", 1); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	p := <-peak
	t.Logf("budget %d (counted at GOMAXPROCS 1); peak %d connections at GOMAXPROCS 4", budget, p)
	if p > budget {
		t.Errorf("peak %d connections for a budget of %d", p, budget)
	}
}
