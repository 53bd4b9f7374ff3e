package redis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestPlacementsRedis, on the server: one module serves a tagged, a
// namespace and a dedicated tenant at once (the dedicated one in a
// database of its own); the boundary probes pass between every pair both
// ways; each tenant's keys are where its placement says; and tenant A,
// with 30 keys and a counter with an AddOnce marker, moves tagged →
// namespace → dedicated → tagged, reading all of it after each move (the
// marker too: a retried AddOnce is not applied twice), each old copy
// cleaned up and verified empty (removing only that placement's keys:
// the tagged placement's cleanup once took the namespace copy too), B
// and C untouched.
type placedRedis struct {
	fx.In
	Tenants *modules.Tenants
	Cache   *redis.Cache   `name:"c"`
	Count   *redis.Counter `name:"n"`
}

// placedRedisOwnDB is the database the placed apps' dedicated tenants use.
const placedRedisOwnDB = 9

// placedRedisApp is an app of one Redis module offering all three
// placements (dedicated: database placedRedisOwnDB of the same server),
// with a cache and a counter route; tenants are at the default (tagged)
// until placed.
func placedRedisApp(t *testing.T, addr string) placedRedis {
	t.Helper()
	run := strings.ToLower(tenancytest.FreshTenant(t).Hex()[:8])
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: addr, Params: map[string]string{"db": fmt.Sprint(placedRedisOwnDB)}}, nil
	}
	var r placedRedis
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		redis.Module("cache", redis.Connect(&goredis.UniversalOptions{Addrs: []string{addr}}), redis.Routed(resolve, redis.RoutedConfig{}), modules.AllowTeardown(),
			modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}),
			redis.CacheRoute("c", redis.RouteConfig{TenantAware: true, Namespace: naming.PerTenant("pl" + run + "-")}),
			redis.CounterRoute("n", redis.RouteConfig{TenantAware: true, Namespace: naming.PerTenant("pn" + run + "-")})),
		fx.Populate(&r))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return r
}

func TestPlacementsRedis(t *testing.T) {
	addr := testsvc.RedisAddr(t)
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	r := placedRedisApp(t, addr)
	const ownDB = placedRedisOwnDB
	r.Tenants.Place(b, "cache", tenancy.Namespace)
	r.Tenants.Place(c, "cache", tenancy.Dedicated)
	r.Tenants.SetPlan(c, tenancy.Dedicated)
	ctx := context.Background()
	for _, id := range []tenancy.ID{a, b, c} {
		if _, err := r.Tenants.Provision(ctx, id); err != nil {
			t.Fatalf("provisioning %s: %v", id, err)
		}
		t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), id) })
	}
	for _, pair := range [][2]tenancy.ID{{a, b}, {b, a}, {b, c}, {c, b}, {a, c}, {c, a}} {
		key := "probe-" + pair[0].Hex()[:2] + pair[1].Hex()[:2]
		tenancytest.Boundary(t, tenancytest.Probe{A: pair[0], B: pair[1],
			Write: func(ctx context.Context) error { return r.Cache.Set(ctx, key, []byte("x"), time.Hour) },
			Read: func(ctx context.Context) (bool, error) {
				_, ok, err := r.Cache.Get(ctx, key)
				return ok, err
			},
			Cleanup: func(ctx context.Context) error { _, err := r.Cache.Delete(ctx, key); return err },
		})
	}
	shared := goredis.NewClient(&goredis.Options{Addr: addr})
	own := goredis.NewClient(&goredis.Options{Addr: addr, DB: ownDB})
	t.Cleanup(func() { _ = shared.Close(); _ = own.Close() })
	keys := func(cl *goredis.Client, pattern string) int {
		t.Helper()
		ks, err := cl.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		return len(ks)
	}
	for _, id := range []tenancy.ID{a, b, c} {
		if err := r.Cache.Set(tenancy.WithTenant(ctx, id), "own", []byte("of "+id.Hex()[:4]), 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := keys(shared, "tw:t:"+a.Hex()+":*"); n == 0 {
		t.Errorf("A's keys are not in the shared keyspace (tw:t:<hex>:…)")
	}
	if n := keys(shared, "tw:nt:pl*-"+b.Hex()+":*"); n == 0 {
		t.Errorf("B's keys are not in its namespace")
	}
	if n := keys(shared, "*"+c.Hex()+"*"); n != 0 {
		t.Errorf("%d of C's keys are on the shared database", n)
	}
	if n := keys(own, "tw:d*"+c.Hex()+"*"); n == 0 {
		t.Errorf("C's keys are not in its own database")
	}

	ctxA := tenancy.WithTenant(ctx, a)
	for i := range 30 {
		if err := r.Cache.Set(ctxA, fmt.Sprint("k", i), []byte(fmt.Sprint("v", i)), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.Count.AddOnce(ctxA, "views", "op-1", 5, time.Hour); err != nil {
		t.Fatal(err)
	}
	tenancytest.CheckMoveAround(t, tenancytest.MoveAround{Tenants: r.Tenants, Tenant: a, Module: "cache",
		After: func(from, to tenancy.Tier, rep modules.MoveReport) {
			t.Logf("moved %s → %s: %d records, writes fenced %v", from, to, rep.Records, rep.Fenced)
			for i := range 30 {
				v, ok, err := r.Cache.Get(ctxA, fmt.Sprint("k", i))
				if err != nil || !ok || string(v) != fmt.Sprint("v", i) {
					t.Fatalf("after the move to %s A's k%d: %q %v %v", to, i, v, ok, err)
				}
			}
			if d, ok, err := r.Cache.TTL(ctxA, "k0"); err != nil || !ok || d <= 0 || d > time.Hour {
				t.Fatalf("after the move to %s A's k0 has TTL %v (%v %v), want its hour", to, d, ok, err)
			}
			if v, applied, err := r.Count.AddOnce(ctxA, "views", "op-1", 5, time.Hour); err != nil || applied || v != 5 {
				t.Fatalf("a retried AddOnce after the move to %s: %d applied=%v %v, want 5 not applied", to, v, applied, err)
			}
		},
		// B and C are untouched by each cleanup.
		Cleaned: func(_, to tenancy.Tier, _ time.Duration) {
			for _, id := range []tenancy.ID{b, c} {
				if v, ok, err := r.Cache.Get(tenancy.WithTenant(ctx, id), "own"); err != nil || !ok || string(v) != "of "+id.Hex()[:4] {
					t.Fatalf("%s's key after A's move to %s and the cleanup: %q %v %v", id, to, v, ok, err)
				}
			}
		}})
	if n := keys(own, "*"+a.Hex()+"*"); n != 0 {
		t.Errorf("%d of A's keys are left in the dedicated database after its cleanup", n)
	}
	if n := keys(shared, "tw:nt:*"+a.Hex()+"*"); n != 0 {
		t.Errorf("%d of A's namespace keys are left after its cleanup", n)
	}
}
