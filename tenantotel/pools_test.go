package tenantotel_test

import (
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
	"github.com/tenantwire/tenantwire/tenantotel"
)

var tenantB = tenancy.MustParseID("0b0b0b0b-0000-4000-8000-00000000000b")

// TestRoutedPoolsAreGauges: a routed Redis module's clients, slots in use
// against its bound, and evictions are series on /metrics: two tenants
// open two clients of a bound of two, and a third tenant's call retires
// the least recently used one, which counts.
// The tenant label is on only for the bounded set the app names: tenant A
// gets its own series, tenant B is "other".
func TestRoutedPoolsAreGauges(t *testing.T) {
	addr := testsvc.RedisAddr(t)
	// Each tenant its own database, so each its own client.
	dbs := map[tenancy.ID]string{tenantA: "13", tenantB: "14"}
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		db, ok := dbs[id]
		if !ok {
			db = "15"
		}
		return routing.Credentials{Endpoint: addr, Params: map[string]string{"db": db}}, nil
	}
	var d struct {
		fx.In
		Server *tenanthttp.Server
		Cache  *redis.Cache `name:"sessions"`
	}
	app := fx.New(fx.NopLogger,
		tenantotel.Module(tenantotel.Config{Telemetry: telemetry.Config{
			MetricTenant: telemetry.TenantRaw, MetricTenants: func(id tenancy.ID) bool { return id == tenantA }}}),
		redis.Module("kvr", redis.Routed(resolve, redis.RoutedConfig{Limits: routing.Limits{MaxClients: 2, MaxConnsPerClient: 2}}),
			redis.CacheRoute("sessions", redis.RouteConfig{})),
		tenanthttp.Module(tenanthttp.Config{TrustedProxy: true, TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0"}),
		fx.Populate(&d),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	for _, id := range []tenancy.ID{tenantA, tenantB} {
		if _, _, err := d.Cache.Get(tenancy.WithTenant(context.Background(), id), "k"); err != nil {
			t.Fatal(err)
		}
	}
	mod := map[string]string{"backend": "redis", "module": "kvr"}
	gauge := func(name string) float64 {
		t.Helper()
		m, ok := series(scrape(t, d.Server), name, mod)
		if !ok {
			t.Fatalf("no %s series for %v", name, mod)
		}
		if m.GetGauge() != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	if got := gauge("tenantwire_routing_clients"); got != 2 {
		t.Errorf("open clients %v, want 2", got)
	}
	if used, limit := gauge("tenantwire_routing_slots_used"), gauge("tenantwire_routing_slots_limit"); used != 2 || limit != 2 {
		t.Errorf("slots %v of %v, want 2 of 2", used, limit)
	}
	before := gauge("tenantwire_routing_evictions_total")
	// A third tenant needs a slot: the least recently used client goes.
	third := tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")
	if _, _, err := d.Cache.Get(tenancy.WithTenant(context.Background(), third), "k"); err != nil {
		t.Fatal(err)
	}
	if after := gauge("tenantwire_routing_evictions_total"); after != before+1 {
		t.Errorf("evictions %v then %v, want one more", before, after)
	}

	fams := scrape(t, d.Server)
	if _, ok := series(fams, "tenantwire_route_duration_seconds", map[string]string{"route": "sessions", "tenant": tenantA.String()}); !ok {
		t.Error("tenant A, in the bounded set, has no series of its own")
	}
	if m, ok := series(fams, "tenantwire_route_duration_seconds", map[string]string{"route": "sessions", "tenant": "other"}); !ok || m.GetHistogram().GetSampleCount() != 2 {
		t.Errorf("tenants outside the bounded set: %v %v", m, ok)
	}
}
