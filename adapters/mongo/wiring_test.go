package mongo_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type order struct {
	Item string `json:"item"`
}

func creds(context.Context, tenancy.ID) (routing.Credentials, error) {
	return routing.Credentials{Endpoint: "mongodb://127.0.0.1:1"}, nil
}

var routed = mongo.Routed(creds, mongo.RoutedConfig{})

func reached(t *testing.T, opts ...mongo.Option) map[string]tenancy.Tier {
	t.Helper()
	var live modules.Live
	tenancytest.RequireWires(t, mongo.Module("m", append([]mongo.Option{mongo.Database("app")}, opts...)...), fx.Populate(&live))
	got := map[string]tenancy.Tier{}
	for _, r := range live.Matrix().Rows {
		got[r.Route] = r.Reached
	}
	return got
}

func TestMatrixRatesEachTier(t *testing.T) {
	got := reached(t, modules.FromGraph(),
		mongo.Document[order]("shared", mongo.RouteConfig{Collection: naming.Shared("orders")}),
		mongo.SearchRoute("tagged", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("s")}),
		mongo.CounterRoute("ns", mongo.RouteConfig{Collection: naming.PerTenant("hits")}),
		mongo.CounterRoute("nsdb", mongo.RouteConfig{Collection: naming.Shared("hits"), Database: naming.PerTenant("t")}),
		mongo.SearchRoute("search-ns", mongo.RouteConfig{Collection: naming.PerTenant("s")}),
		mongo.OutboxRoute("outbox-untagged", mongo.RouteConfig{Collection: naming.PerTenant("ob")}),
		mongo.OutboxRoute("outbox-ns", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("ob2")}),
	)
	want := map[string]tenancy.Tier{
		"shared": tenancy.None, "tagged": tenancy.Tagged, "ns": tenancy.Namespace, "nsdb": tenancy.Namespace,
		// Only the collection counts: the static index name does not hold search back.
		"search-ns": tenancy.Namespace,
		// The outbox's resolver counts only when it is tenant-aware.
		"outbox-untagged": tenancy.None, "outbox-ns": tenancy.Namespace,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("route %s reaches %s, want %s", k, got[k], v)
		}
	}
}

func TestRoutedReachesDedicated(t *testing.T) {
	got := reached(t, routed, modules.RequiredIsolation(tenancy.Dedicated),
		mongo.Document[order]("orders", mongo.RouteConfig{Collection: naming.Shared("orders")}),
		mongo.RawFilterRoute("raw", mongo.RouteConfig{Collection: naming.Shared("orders")}))
	if got["orders"] != tenancy.Dedicated || got["raw"] != tenancy.Dedicated {
		t.Fatalf("reached %v", got)
	}
}

func TestRawFilterRefusedBelowDedicated(t *testing.T) {
	for name, cfg := range map[string]mongo.RouteConfig{
		"none":      {Collection: naming.Shared("orders")},
		"tagged":    {TenantAware: true, Collection: naming.Shared("orders")},
		"namespace": {Collection: naming.PerTenant("orders")},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeStatementOriginFloor,
				mongo.Module("m", modules.FromGraph(), mongo.Database("app"), mongo.RawFilterRoute("raw", cfg)))
			if e.Route != "raw" || e.Backend != "mongodb" || e.Origin != tenancy.Raw {
				t.Errorf("refusal: %v", e)
			}
		})
	}
}

func TestFloorRefusals(t *testing.T) {
	e := tenancytest.RequireRefused(t, tenancy.ValidationFailed("mongodb"),
		mongo.Module("m", modules.FromGraph(), mongo.Database("app"), modules.RequiredIsolation(tenancy.Namespace),
			mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("orders")})))
	if e.Reached != tenancy.Tagged || e.Required != tenancy.Namespace || e.Fix == "" {
		t.Errorf("refusal: %v", e)
	}
}

func TestInvalidWiringRefused(t *testing.T) {
	cases := map[string][]mongo.Option{
		"no database":     {mongo.Document[order]("orders", mongo.RouteConfig{Collection: naming.Shared("o")})},
		"bad database":    {mongo.Database("a.b")},
		"dollar":          {mongo.Database("app"), mongo.CounterRoute("c", mongo.RouteConfig{Collection: naming.Shared("a$b")})},
		"dotted static":   {mongo.Database("app"), mongo.CounterRoute("c", mongo.RouteConfig{Collection: naming.Shared("a.b")})},
		"system":          {mongo.Database("app"), mongo.CounterRoute("c", mongo.RouteConfig{Collection: naming.Shared("system_x")})},
		"long db prefix":  {mongo.Database("app"), mongo.CounterRoute("c", mongo.RouteConfig{Collection: naming.Shared("c"), Database: naming.PerTenant("p234567890123456789012345678901")})},
		"text not search": {mongo.Database("app"), mongo.CounterRoute("c", mongo.RouteConfig{Collection: naming.Shared("c"), TextIndex: true})},
		"duplicate":       {mongo.Database("app"), mongo.CounterRoute("c", mongo.RouteConfig{Collection: naming.Shared("c")}), mongo.CounterRoute("c", mongo.RouteConfig{Collection: naming.Shared("d")})},
		"two sources":     {mongo.Database("app"), routed, mongo.Connect("mongodb://127.0.0.1:1")},
		"routed no func":  {mongo.Database("app"), mongo.Routed(nil, mongo.RoutedConfig{})},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, mongo.Module("m", opts...))
		})
	}
}

// A module database of the per-tenant shape is some tenant's database
// (static_name_in_tenant_space); a collection named like the migration
// history would let a route's documents stand for history records
// (reserved_name), in the module's database or in a tenant's own.
func TestReservedAndTenantShapedNamesRefused(t *testing.T) {
	b := mongo.DatabaseName("app", tenancytest.TenantB)
	e := tenancytest.RequireRefused(t, tenancy.CodeStaticNameInTenantSpace, mongo.Module("m", modules.FromGraph(), mongo.Database(b),
		mongo.CounterRoute("c", mongo.RouteConfig{Collection: naming.Shared("hits"), Database: naming.PerTenant("app")})))
	if !strings.Contains(e.Detail, b) || !strings.Contains(e.Fix, "mongo.Database") {
		t.Errorf("refusal %+v", e)
	}
	for name, rc := range map[string]mongo.RouteConfig{
		"static":              {TenantAware: true, Collection: naming.Shared("tenantwire_migrations")},
		"per tenant":          {TenantAware: true, Collection: naming.PerTenant("TenantWire_x")},
		"per-tenant database": {TenantAware: true, Collection: naming.Shared("tenantwire_migrations"), Database: naming.PerTenant("t")},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeReservedName, mongo.Module("m", modules.FromGraph(), mongo.Database("app"),
				mongo.Document[order]("orders", rc)))
			if e.Route != "orders" || !strings.Contains(e.Fix, "tenantwire") {
				t.Errorf("refusal %+v", e)
			}
		})
	}
}

func TestNoClientIsAWiringError(t *testing.T) {
	err := fx.New(fx.NopLogger, mongo.Module("m", modules.FromGraph(), mongo.Database("app"),
		mongo.Document[order]("orders", mongo.RouteConfig{Collection: naming.Shared("o")})),
		fx.Invoke(func(*mongo.Documents[order]) {})).Err()
	if tenancy.CodeOf(err) != tenancy.CodeWiringInvalid {
		t.Fatalf("err = %v", err)
	}
}

func TestConnBudget(t *testing.T) {
	small := mongo.Routed(creds, mongo.RoutedConfig{Limits: routing.Limits{MaxClients: 8, MaxConnsPerClient: 4}})
	e := tenancytest.RequireRefused(t, tenancy.CodeConnectionBudgetExceeded,
		mongo.Module("m", mongo.Database("app"), small, modules.ConnBudget(16), mongo.CounterRoute("c", mongo.RouteConfig{Collection: naming.Shared("c")})))
	if e.Module != "m" {
		t.Errorf("refusal: %v", e)
	}
	tenancytest.RequireWires(t, mongo.Module("m", mongo.Database("app"), small, modules.ConnBudget(32),
		mongo.CounterRoute("c", mongo.RouteConfig{Collection: naming.Shared("c")})))
}

func TestTwoModulesInOneApp(t *testing.T) {
	var a, b *mongo.Provisioner
	tenancytest.RequireWires(t,
		mongo.Module("plain", mongo.Database("app"), deadClient(t), mongo.CounterRoute("c1", mongo.RouteConfig{Collection: naming.Shared("c")})),
		mongo.Module("routed", mongo.Database("app"), routed, mongo.CounterRoute("c2", mongo.RouteConfig{Collection: naming.Shared("c")})),
		named("plain", &a), named("routed", &b))
	if a == nil || b == nil || a == b {
		t.Fatal("each module provides its own provisioner")
	}
}

func TestRelayWiring(t *testing.T) {
	dest := outbox.DestinationFunc(func(context.Context, outbox.Message) error { return nil })
	tenants := func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{tenancytest.TenantA}, nil }
	global := mongo.OutboxRoute("events", mongo.RouteConfig{Collection: naming.Shared("events")})
	aware := mongo.OutboxRoute("events", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("events")})
	perTenant := mongo.OutboxRoute("events", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("events")})
	// Connect dials lazily: the relay's route is built, nothing connects.
	conn := mongo.Connect("mongodb://127.0.0.1:1")
	mod := func(opts ...mongo.Option) fx.Option {
		return mongo.Module("m", append([]mongo.Option{mongo.Database("app")}, opts...)...)
	}
	tenancytest.RequireWires(t, mod(conn, global, mongo.Relay("events", outbox.RelayConfig{Destination: dest})))
	tenancytest.RequireWires(t, mod(conn, aware, mongo.Relay("events", outbox.RelayConfig{WorkerConfig: shards.WorkerConfig{Tenants: tenants}, Destination: dest})))
	for name, opts := range map[string][]mongo.Option{
		"tenant-aware": {conn, aware, mongo.Relay("events", outbox.RelayConfig{Destination: dest})},
		"per-tenant":   {conn, perTenant, mongo.Relay("events", outbox.RelayConfig{Destination: dest})},
		"routed":       {routed, global, mongo.Relay("events", outbox.RelayConfig{Destination: dest})},
	} {
		t.Run(name, func(t *testing.T) { tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, mod(opts...)) })
	}
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, mod(conn, global, mongo.Relay("events", outbox.RelayConfig{})))
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		mod(conn, mongo.CounterRoute("events", mongo.RouteConfig{Collection: naming.Shared("c")}), mongo.Relay("events", outbox.RelayConfig{Destination: dest})))
}
