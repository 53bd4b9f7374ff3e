package neo4j_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func resolver(context.Context, tenancy.ID) (routing.Credentials, error) {
	return routing.Credentials{}, errors.New("not used: wiring checks resolve nothing")
}

// Wiring checks need no server: no driver is given and none is dialled.
func TestWiresEveryTierWithoutAServer(t *testing.T) {
	tenancytest.RequireWires(t, neo4j.Module("graph",
		neo4j.RequiredIsolation(tenancy.Tagged),
		neo4j.GraphRoute("tagged", neo4j.TenantAware()),
		neo4j.GraphRoute("ns", neo4j.PerTenantDatabasePrefix("acme")),
	))
	tenancytest.RequireWires(t, neo4j.Module("dedicated",
		neo4j.RequiredIsolation(tenancy.Dedicated),
		neo4j.Routed(resolver, neo4j.RoutedConfig{}),
		neo4j.GraphRoute("g"),
		neo4j.RawCypherRoute("raw"),
	))
}

func TestMatrixRatesEachTier(t *testing.T) {
	var live modules.Live
	tenancytest.RequireWires(t,
		neo4j.Module("plain",
			neo4j.GraphRoute("shared"),
			neo4j.GraphRoute("tagged", neo4j.TenantAware()),
			neo4j.GraphRoute("ns", neo4j.PerTenantDatabase(neo4j.TenantDatabase("t")))),
		neo4j.Module("routed", neo4j.Routed(resolver, neo4j.RoutedConfig{}), neo4j.GraphRoute("dedicated"), neo4j.RawCypherRoute("raw")),
		fx.Populate(&live))
	got := map[string]tenancy.Tier{}
	for _, r := range live.Matrix().Rows {
		got[r.Route] = r.Reached
	}
	want := map[string]tenancy.Tier{"shared": tenancy.None, "tagged": tenancy.Tagged, "ns": tenancy.Namespace,
		"dedicated": tenancy.Dedicated, "raw": tenancy.Dedicated}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("route %s reaches %s, want %s", k, got[k], v)
		}
	}
}

// The raw hatch declares origin raw: anything below dedicated is refused
// at fx.New, even with no floor declared.
func TestRawHatchRefusedBelowDedicated(t *testing.T) {
	for name, opt := range map[string]neo4j.RouteOption{
		"none":      nil,
		"tagged":    neo4j.TenantAware(),
		"namespace": neo4j.PerTenantDatabasePrefix("acme"),
	} {
		t.Run(name, func(t *testing.T) {
			var opts []neo4j.RouteOption
			if opt != nil {
				opts = append(opts, opt)
			}
			e := tenancytest.RequireRefused(t, tenancy.CodeStatementOriginFloor,
				neo4j.Module("m", neo4j.RawCypherRoute("raw", opts...)))
			if e.Route != "raw" || e.Backend != "neo4j" || e.Origin != tenancy.Raw {
				t.Errorf("refusal fields: %+v", e)
			}
		})
	}
}

// A namespace floor refuses a tagged route, naming the route and tiers.
func TestNamespaceFloorRefusesTagged(t *testing.T) {
	e := tenancytest.RequireRefused(t, tenancy.ValidationFailed("neo4j"), neo4j.Module("m",
		neo4j.RequiredIsolation(tenancy.Namespace),
		neo4j.GraphRoute("ok", neo4j.PerTenantDatabasePrefix("acme")),
		neo4j.GraphRoute("weak", neo4j.TenantAware()),
	))
	if e.Route != "weak" || e.Reached != tenancy.Tagged || e.Required != tenancy.Namespace {
		t.Errorf("refusal fields: %+v", e)
	}
	tenancytest.RequireRefused(t, tenancy.ValidationFailed("neo4j"), neo4j.Module("m",
		neo4j.RequiredIsolation(tenancy.Dedicated),
		neo4j.GraphRoute("ns", neo4j.PerTenantDatabasePrefix("acme")),
	))
}

func TestInvalidWiringRefused(t *testing.T) {
	for name, opts := range map[string][]neo4j.Option{
		"bad prefix":    {neo4j.GraphRoute("g", neo4j.PerTenantDatabasePrefix("Acme"))},
		"system prefix": {neo4j.GraphRoute("g", neo4j.PerTenantDatabasePrefix("system"))},
		"long prefix":   {neo4j.GraphRoute("g", neo4j.PerTenantDatabasePrefix("a234567890123456789012345678901"))},
		"empty prefix":  {neo4j.GraphRoute("g", neo4j.PerTenantDatabasePrefix(""))},
		"duplicate":     {neo4j.GraphRoute("g"), neo4j.GraphRoute("g")},
		"depth":         {neo4j.GraphRoute("g", neo4j.MaxDepth(0))},
		"no resolver":   {neo4j.Routed(nil, neo4j.RoutedConfig{}), neo4j.GraphRoute("g")},
		"route name":    {neo4j.GraphRoute(`g"x`)},
		"empty name":    {neo4j.GraphRoute("")},
	} {
		t.Run(name, func(t *testing.T) {
			tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, neo4j.Module("m", opts...))
		})
	}
}

// A route used with no driver anywhere is refused when fx builds it,
// before any hook runs.
func TestNoDriverRefused(t *testing.T) {
	err := fx.New(fx.NopLogger, neo4j.Module("m", neo4j.GraphRoute("g")),
		fx.Invoke(fx.Annotate(func(*neo4j.Graph) {}, fx.ParamTags(`name:"g"`)))).Err()
	if tenancy.CodeOf(err) != tenancy.CodeWiringInvalid {
		t.Fatalf("no driver: %v", err)
	}
}

func TestConnectionBudget(t *testing.T) {
	tenancytest.RequireRefused(t, tenancy.CodeConnectionBudgetExceeded, neo4j.Module("m",
		neo4j.ConnBudget(100), neo4j.Routed(resolver, neo4j.RoutedConfig{MaxClients: 10, MaxConnsPerClient: 16}),
		neo4j.GraphRoute("g")))
	tenancytest.RequireWires(t, neo4j.Module("m",
		neo4j.ConnBudget(160), neo4j.Routed(resolver, neo4j.RoutedConfig{MaxClients: 10, MaxConnsPerClient: 16}),
		neo4j.GraphRoute("g")))
}
