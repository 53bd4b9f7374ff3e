package redis_test

import (
	"context"
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

// TestReadinessReportsTheRoutedPool: a routed module's readiness answer
// carries its client pool (clients open, slots against MaxClients), and a
// plain module's carries none.
func TestReadinessReportsTheRoutedPool(t *testing.T) {
	addr := testsvc.RedisAddr(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	defer rdb.Close()
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: addr, Params: map[string]string{"db": "12"}}, nil
	}
	var d struct {
		fx.In
		Cache *redis.Cache `name:"sessions"`
		Ready modules.Readiness
	}
	app := fx.New(fx.NopLogger,
		redis.Module("readyrouted", redis.Routed(resolve, redis.RoutedConfig{Limits: routing.Limits{MaxClients: 3, MaxConnsPerClient: 2}}),
			redis.CacheRoute("sessions", redis.RouteConfig{})),
		redis.Module("readyplain", redis.Use(rdb), redis.CacheRoute("plain", redis.RouteConfig{TenantAware: true})),
		fx.Populate(&d))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	id := tenancy.MustParseID("0d0d0d0d-0000-4000-8000-00000000000d")
	if _, _, err := d.Cache.Get(tenancy.WithTenant(context.Background(), id), "k"); err != nil {
		t.Fatal(err)
	}
	ready, results := d.Ready.Check(context.Background(), 2*time.Second)
	if !ready {
		t.Fatalf("not ready: %+v", results)
	}
	byModule := map[string]modules.ReadyResult{}
	for _, r := range results {
		byModule[r.Module] = r
	}
	got := byModule["readyrouted"].Routed
	if got == nil || got.Clients != 1 || got.MaxClients != 3 || got.Tenants != 1 {
		t.Fatalf("routed module's pool %+v, want 1 client of 3 for 1 tenant", got)
	}
	if p := byModule["readyplain"].Routed; p != nil {
		t.Fatalf("a plain module reported a routed pool: %+v", p)
	}
}
