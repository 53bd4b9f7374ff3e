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
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestArchiveRoundTripRedisDedicated: on a routed module, A's keys in its
// own database (a cache key with a TTL, a counter with its AddOnce
// marker) come back under C in another database of the server; B's, in
// a third, are untouched; nothing under C's keys names A; and
// offboarding C leaves its database without a key of C.
func TestArchiveRoundTripRedisDedicated(t *testing.T) {
	addr := testsvc.RedisAddr(t)
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	dbs := map[tenancy.ID]string{a: "5", b: "6", c: "7"}
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		db, ok := dbs[id]
		if !ok {
			return routing.Credentials{}, fmt.Errorf("no database for tenant %s", id)
		}
		return routing.Credentials{Endpoint: addr, Params: map[string]string{"db": db}}, nil
	}
	var r struct {
		fx.In
		Tenants *modules.Tenants
		Cache   *redis.Cache   `name:"c"`
		Count   *redis.Counter `name:"count"`
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		redis.Module("cache", redis.Routed(resolve, redis.RoutedConfig{}), modules.AllowTeardown(),
			redis.CacheRoute("c", redis.RouteConfig{}),
			redis.CounterRoute("count", redis.RouteConfig{})),
		fx.Populate(&r))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	for _, id := range []tenancy.ID{a, b, c} {
		t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), id) })
	}
	for _, id := range []tenancy.ID{a, b} {
		ctx := tenancy.WithTenant(context.Background(), id)
		if err := r.Cache.Set(ctx, "{odd}:key", []byte("v of "+id.Hex()[:4]), time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Count.AddOnce(ctx, "n", "op-1", 5, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	tenancytest.CheckRoundTrip(t, tenancytest.RoundTrip{Tenants: r.Tenants, A: a, B: b, C: c,
		Read: func(ctx context.Context) (any, error) {
			v, _, err := r.Cache.Get(ctx, "{odd}:key")
			if err != nil {
				return nil, err
			}
			n, err := r.Count.Get(ctx, "n")
			return []any{v, n}, err
		}})
	ctxC := tenancy.WithTenant(context.Background(), c)
	if v, applied, err := r.Count.AddOnce(ctxC, "n", "op-1", 5, time.Hour); err != nil || applied || v != 5 {
		t.Errorf("AddOnce under C after the import: %d applied=%v %v, want 5 not applied (the marker came along)", v, applied, err)
	}
	direct := func(db int) *goredis.Client {
		cl := goredis.NewClient(&goredis.Options{Addr: addr, DB: db})
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	dbC, dbA := direct(7), direct(5)
	keysOf := func(cl *goredis.Client, id tenancy.ID) []string {
		keys, err := cl.Keys(context.Background(), "*"+id.Hex()+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	if keys := keysOf(dbC, c); len(keys) != 3 {
		t.Errorf("C's database holds %v of C's keys, want the cache key, the counter and its marker", keys)
	}
	if keys := keysOf(dbC, a); len(keys) != 0 {
		t.Errorf("C's database holds keys naming A: %v", keys)
	}
	rep, err := r.Tenants.Offboard(context.Background(), c)
	if err != nil {
		t.Fatalf("offboarding C: %v", err)
	}
	tenancytest.RequireVerified(t, rep, "redis")
	if keys := keysOf(dbC, c); len(keys) != 0 {
		t.Errorf("C's database still holds %v after offboarding C", keys)
	}
	if keys := keysOf(dbA, a); len(keys) != 3 || !strings.Contains(strings.Join(keys, " "), a.Hex()) {
		t.Errorf("A's database after offboarding C: %v, want A's three keys", keys)
	}
}
