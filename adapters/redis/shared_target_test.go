package redis_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/connprobe"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A routed Redis module takes no target claims: every key carries the
// tenant, so two tenants resolving to one server and database, even with
// identical credentials (one shared client), never see each other's keys.
func TestRoutedSharedTargetKeepsTenantsApart(t *testing.T) {
	e := newEnv(t)
	db := e.routedDB(tenantNoCreds) // neither A's nor B's own database
	shared := routedSource(redis.Routed(func(context.Context, tenancy.ID) (routing.Credentials, error) {
		return e.creds(db), nil
	}, redis.RoutedConfig{
		Limits: routing.Limits{MaxConnsPerClient: 2},
	}))
	name := e.name("sharedtarget")
	c := route[*redis.Cache](t, e, name, shared, redis.CacheRoute(name, redis.RouteConfig{}))
	if err := c.Set(ctxA, "k", []byte("a"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Get(ctxB, "k"); err != nil || ok {
		t.Fatalf("B reads A's key: %v, %v", ok, err)
	}
	if ok, err := c.Delete(ctxB, "k"); err != nil || ok {
		t.Fatalf("B deletes A's key: %v, %v", ok, err)
	}
	if err := c.Set(ctxB, "k", []byte("b"), time.Minute); err != nil {
		t.Fatal(err)
	}
	for ctx, want := range map[context.Context]string{ctxA: "a", ctxB: "b"} {
		if v, ok, err := c.Get(ctx, "k"); err != nil || !ok || string(v) != want {
			t.Fatalf("got %q, %v, %v; want %q", v, ok, err, want)
		}
	}
	keys := e.keysIn(t, db)
	if len(keys) != 2 || !strings.Contains(strings.Join(keys, " "), tenancytest.TenantA.Hex()) ||
		!strings.Contains(strings.Join(keys, " "), tenancytest.TenantB.Hex()) {
		t.Fatalf("keys in the shared database: %v", keys)
	}
}

// TestRoutedBudgetIsAHardLimit: MaxClients 2 with one connection per client
// holds twelve tenants calling at once to two connections, counted exactly
// by a dialer wrapper and in CLIENT LIST (where a closed connection may
// linger a moment, hence the allowance there).
func TestRoutedBudgetIsAHardLimit(t *testing.T) {
	e := newEnv(t)
	e.skipOnCluster(t, "it counts one server's connections in CLIENT LIST, and a cluster client holds a pool per node")
	addr := e.addrs[0]
	clientName := "twbudget" + e.suffix
	var dialed connprobe.Counter
	const tenants = 12
	routed := routedSource(redis.Routed(func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		// Distinct credentials: one client per tenant.
		return routing.Credentials{Endpoint: addr, User: "default", Secret: "", Params: map[string]string{"tenant": id.Hex()}}, nil
	}, redis.RoutedConfig{
		Limits: routing.Limits{MaxClients: 2, MaxConnsPerClient: 1, MaxWait: time.Minute},
		Open: func(c routing.Credentials) (goredis.UniversalClient, error) {
			return goredis.NewClient(&goredis.Options{Addr: c.Endpoint, DB: 13, PoolSize: 1, ClientName: clientName,
				Dialer: dialed.DialContext}), nil
		},
	}))
	name := e.name("budget")
	c := route[*redis.Counter](t, e, name, routed, modules.ConnBudget(2), redis.CounterRoute(name, redis.RouteConfig{}))

	stop := make(chan struct{})
	peak := make(chan int)
	go func() {
		top := 0
		for {
			select {
			case <-stop:
				peak <- top
				return
			default:
			}
			if list, err := e.client.ClientList(context.Background()).Result(); err == nil {
				top = max(top, strings.Count(list, "name="+clientName+" "))
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for i := range tenants {
		wg.Go(func() {
			ctx := tenancy.WithTenant(context.Background(), tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+100)))
			for range 5 {
				if _, err := c.Add(ctx, "n", 1); err != nil {
					t.Error(err)
					return
				}
			}
			if n, err := c.Get(ctx, "n"); err != nil || n != 5 {
				t.Errorf("counter %d, %v", n, err)
			}
		})
	}
	wg.Wait()
	close(stop)
	server := <-peak
	t.Logf("peak connections: %d dialed and open, %d in CLIENT LIST", dialed.Peak(), server)
	if p := dialed.Peak(); p > 2 || p == 0 {
		t.Errorf("peak %d connections for a budget of 2", p)
	}
	if server > 2*2 {
		t.Errorf("peak %d server connections for a budget of 2", server)
	}
}
