package redis_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type archiveRoutes struct {
	fx.In
	Tenants *modules.Tenants
	Tagged  *redis.Cache   `name:"tagged"`
	NS      *redis.Cache   `name:"ns"`
	Count   *redis.Counter `name:"count"`
	Global  *redis.Cache   `name:"global"`
}

// archiveRedisApp is the archive tests' app on the client source gives
// (redis.Connect, redis.Use), with more options of the test's own.
func archiveRedisApp(t *testing.T, source redis.Option, run string, more ...fx.Option) archiveRoutes {
	t.Helper()
	var r archiveRoutes
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		redis.Module("cache", source, modules.AllowTeardown(),
			redis.CacheRoute("tagged", redis.RouteConfig{TenantAware: true}),
			redis.CacheRoute("ns", redis.RouteConfig{Namespace: naming.PerTenant("ar" + run + "-")}),
			redis.CounterRoute("count", redis.RouteConfig{TenantAware: true}),
			redis.CacheRoute("global", redis.RouteConfig{})),
		fx.Populate(&r), fx.Options(more...))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return r
}

// TestArchiveRoundTripRedis, on one server and on the cluster: A's keys
// of a tagged route, a namespace route (a key with braces, bytes that are
// not UTF-8, a TTL) and a counter with an AddOnce marker come back under
// C; B is untouched, the shared route is listed as skipped, and a rerun
// of the AddOnce under C is not applied twice.
func TestArchiveRoundTripRedis(t *testing.T) {
	onEachTopology(t, func(t *testing.T, opts *goredis.UniversalOptions) {
		run := strings.ToLower(tenancytest.FreshTenant(t).Hex()[:8])
		r := archiveRedisApp(t, redis.Connect(opts), run)
		a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
		for _, id := range []tenancy.ID{a, b, c} {
			t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), id) })
		}
		for _, id := range []tenancy.ID{a, b} {
			ctx := tenancy.WithTenant(context.Background(), id)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(r.Tagged.Set(ctx, "k", []byte("v of "+id.Hex()[:4]), 0))
			must(r.NS.Set(ctx, "{odd}:key", []byte{0xff, 0, 0xfe}, time.Hour))
			must(r.NS.Set(ctx, "caf\xe9", []byte("latin-1 key"), 0))
			_, _, err := r.Count.AddOnce(ctx, "n", "op-1", 5, time.Hour)
			must(err)
		}
		if err := r.Global.Set(tenancy.WithGlobal(context.Background()), "g", []byte("fleet"), 0); err != nil {
			t.Fatal(err)
		}
		archive := tenancytest.CheckRoundTrip(t, tenancytest.RoundTrip{Tenants: r.Tenants, A: a, B: b, C: c,
			Read: func(ctx context.Context) (any, error) {
				v1, _, err := r.Tagged.Get(ctx, "k")
				if err != nil {
					return nil, err
				}
				v2, _, err := r.NS.Get(ctx, "{odd}:key")
				if err != nil {
					return nil, err
				}
				v3, _, err := r.NS.Get(ctx, "caf\xe9")
				if err != nil {
					return nil, err
				}
				n, err := r.Count.Get(ctx, "n")
				return []any{v1, v2, v3, n}, err
			}})
		if !bytes.Contains(archive, []byte(`"route":"global","reason":"tenant-global or shared`)) {
			t.Errorf("the shared route is not listed as skipped:\n%s", archive)
		}
		ctxC := tenancy.WithTenant(context.Background(), c)
		if v, applied, err := r.Count.AddOnce(ctxC, "n", "op-1", 5, time.Hour); err != nil || applied || v != 5 {
			t.Errorf("AddOnce under C after the import: %d applied=%v %v, want 5 not applied (the marker came along)", v, applied, err)
		}
	})
}

// TestArchiveRefusedRedis: a tampered archive, one into a tenant that
// holds keys and one edited (resealed) to name a route the module does
// not have are refused with nothing written.
func TestArchiveRefusedRedis(t *testing.T) {
	run := strings.ToLower(tenancytest.FreshTenant(t).Hex()[:8])
	r := archiveRedisApp(t, redis.Connect(&goredis.UniversalOptions{Addrs: []string{testsvc.RedisAddr(t)}}), run)
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	for _, id := range []tenancy.ID{a, b, c} {
		t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), id) })
	}
	for _, id := range []tenancy.ID{a, b} {
		if err := r.Tagged.Set(tenancy.WithTenant(context.Background(), id), "k", []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := r.Tenants.Export(context.Background(), a, &buf); err != nil {
		t.Fatal(err)
	}
	archive := buf.Bytes()
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, tenancytest.Truncated(archive), tenancy.CodeArchiveInvalid)
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, tenancytest.Altered(archive, `"key":"k"`, `"key":"j"`), tenancy.CodeArchiveMismatch)
	tenancytest.CheckArchiveRefused(t, r.Tenants, b, archive, tenancy.CodeArchiveTargetNotEmpty)
	tenancytest.CheckArchiveRefused(t, r.Tenants, c, tenancytest.Reseal(t, tenancytest.Altered(archive, `"route":"tagged"`, `"route":"global"`)), tenancy.CodeArchiveMismatch)
}
