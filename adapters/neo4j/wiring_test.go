package neo4j_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func resolver(context.Context, tenancy.ID) (routing.Credentials, error) {
	return routing.Credentials{}, errors.New("not used: wiring checks resolve nothing")
}

// Wiring checks need no server: no driver is given and none is dialled.
func TestWiresEveryTierWithoutAServer(t *testing.T) {
	tenancytest.RequireWires(t, neo4j.Module("graph", modules.FromGraph(),
		modules.RequiredIsolation(tenancy.Tagged),
		neo4j.GraphRoute("tagged", neo4j.RouteConfig{TenantAware: true}),
		neo4j.GraphRoute("ns", neo4j.RouteConfig{Database: naming.PerTenant("acme")}),
	))
	tenancytest.RequireWires(t, neo4j.Module("dedicated",
		modules.RequiredIsolation(tenancy.Dedicated),
		neo4j.Routed(resolver, routing.Limits{}),
		neo4j.GraphRoute("g", neo4j.RouteConfig{}),
		neo4j.RawCypherRoute("raw", neo4j.RouteConfig{}),
	))
}

func TestMatrixRatesEachTier(t *testing.T) {
	var live modules.Live
	tenancytest.RequireWires(t,
		neo4j.Module("plain", modules.FromGraph(),
			neo4j.GraphRoute("shared", neo4j.RouteConfig{}),
			neo4j.GraphRoute("tagged", neo4j.RouteConfig{TenantAware: true}),
			neo4j.GraphRoute("ns", neo4j.RouteConfig{Database: naming.PerTenant("t")})),
		neo4j.Module("routed", neo4j.Routed(resolver, routing.Limits{}), neo4j.GraphRoute("dedicated", neo4j.RouteConfig{}), neo4j.RawCypherRoute("raw", neo4j.RouteConfig{})),
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
	for name, cfg := range map[string]neo4j.RouteConfig{
		"none":      {},
		"tagged":    {TenantAware: true},
		"namespace": {Database: naming.PerTenant("acme")},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeStatementOriginFloor,
				neo4j.Module("m", neo4j.RawCypherRoute("raw", cfg)))
			if e.Route != "raw" || e.Backend != "neo4j" || e.Origin != tenancy.Raw {
				t.Errorf("refusal fields: %+v", e)
			}
		})
	}
}

// A namespace floor refuses a tagged route, naming the route and tiers.
func TestNamespaceFloorRefusesTagged(t *testing.T) {
	e := tenancytest.RequireRefused(t, tenancy.ValidationFailed("neo4j"), neo4j.Module("m",
		modules.RequiredIsolation(tenancy.Namespace),
		neo4j.GraphRoute("ok", neo4j.RouteConfig{Database: naming.PerTenant("acme")}),
		neo4j.GraphRoute("weak", neo4j.RouteConfig{TenantAware: true}),
	))
	if e.Route != "weak" || e.Reached != tenancy.Tagged || e.Required != tenancy.Namespace {
		t.Errorf("refusal fields: %+v", e)
	}
	tenancytest.RequireRefused(t, tenancy.ValidationFailed("neo4j"), neo4j.Module("m",
		modules.RequiredIsolation(tenancy.Dedicated),
		neo4j.GraphRoute("ns", neo4j.RouteConfig{Database: naming.PerTenant("acme")}),
	))
}

func TestInvalidWiringRefused(t *testing.T) {
	for name, opts := range map[string][]neo4j.Option{
		"bad prefix":      {modules.FromGraph(), neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.PerTenant("Acme")})},
		"system prefix":   {modules.FromGraph(), neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.PerTenant("system")})},
		"long prefix":     {modules.FromGraph(), neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.PerTenant("a234567890123456789012345678901")})},
		"shared database": {modules.FromGraph(), neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.Shared("acme")})},
		"duplicate":       {modules.FromGraph(), neo4j.GraphRoute("g", neo4j.RouteConfig{}), neo4j.GraphRoute("g", neo4j.RouteConfig{})},
		"negative depth":  {modules.FromGraph(), neo4j.GraphRoute("g", neo4j.RouteConfig{MaxDepth: -1})},
		"deep":            {modules.FromGraph(), neo4j.GraphRoute("g", neo4j.RouteConfig{MaxDepth: 65})}, // the largest is 64
		"raw depth":       {neo4j.Routed(resolver, routing.Limits{}), neo4j.RawCypherRoute("raw", neo4j.RouteConfig{MaxDepth: 2})},
		"no resolver":     {neo4j.Routed(nil, routing.Limits{}), neo4j.GraphRoute("g", neo4j.RouteConfig{})},
		"route name":      {modules.FromGraph(), neo4j.GraphRoute(`g"x`, neo4j.RouteConfig{})},
		"empty name":      {modules.FromGraph(), neo4j.GraphRoute("", neo4j.RouteConfig{})},
	} {
		t.Run(name, func(t *testing.T) {
			tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, neo4j.Module("m", opts...))
		})
	}
}

// A static module database named as tenant B's database under a route's
// naming.PerTenant database would be B's too (B's provisioning, migrations and calls
// would use what every tenant of the static routes shares): refused
// whatever the prefix.
func TestStaticDatabaseInTenantSpace(t *testing.T) {
	b := "acme-" + tenancytest.TenantB.Hex() // naming.PerTenant("acme")'s database for B
	for name, db := range map[string]string{"beside its prefix": b, "any prefix": "other-" + tenancytest.TenantB.Hex()} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeStaticNameInTenantSpace, neo4j.Module("m", modules.FromGraph(), neo4j.Database(db),
				neo4j.GraphRoute("shared", neo4j.RouteConfig{TenantAware: true}),
				neo4j.GraphRoute("ns", neo4j.RouteConfig{Database: naming.PerTenant("acme")})))
			if e.Module != "m" || e.Backend != "neo4j" || !strings.Contains(e.Detail, db) || !strings.Contains(e.Fix, "neo4j.Database") {
				t.Errorf("refusal %+v", e)
			}
		})
	}
	tenancytest.RequireWires(t, neo4j.Module("m", modules.FromGraph(), neo4j.Database("acme"),
		neo4j.GraphRoute("shared", neo4j.RouteConfig{TenantAware: true}),
		neo4j.GraphRoute("ns", neo4j.RouteConfig{Database: naming.PerTenant("acme")})))
}

// A module with no driver source is refused at fx.New and by the dry run
// alike; FromGraph with nothing in the graph, when fx builds the route,
// before any hook runs.
func TestNoDriverRefused(t *testing.T) {
	mod := neo4j.Module("m", neo4j.GraphRoute("g", neo4j.RouteConfig{}))
	if e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, mod); !strings.Contains(e.Fix, "modules.FromGraph()") {
		t.Errorf("fix %q", e.Fix)
	}
	if _, err := modules.DryRun(mod); tenancy.CodeOf(err) != tenancy.CodeWiringInvalid {
		t.Fatalf("dry run: %v", err)
	}
	err := fx.New(fx.NopLogger, neo4j.Module("m", modules.FromGraph(), neo4j.GraphRoute("g", neo4j.RouteConfig{})),
		fx.Invoke(fx.Annotate(func(*neo4j.Graph) {}, fx.ParamTags(`name:"g"`)))).Err()
	if tenancy.CodeOf(err) != tenancy.CodeWiringInvalid {
		t.Fatalf("FromGraph with no driver: %v", err)
	}
}

func TestConnectionBudget(t *testing.T) {
	tenancytest.RequireRefused(t, tenancy.CodeConnectionBudgetExceeded, neo4j.Module("m",
		modules.ConnBudget(100), neo4j.Routed(resolver, routing.Limits{MaxClients: 10, MaxConnsPerClient: 16}),
		neo4j.GraphRoute("g", neo4j.RouteConfig{})))
	tenancytest.RequireWires(t, neo4j.Module("m",
		modules.ConnBudget(160), neo4j.Routed(resolver, routing.Limits{MaxClients: 10, MaxConnsPerClient: 16}),
		neo4j.GraphRoute("g", neo4j.RouteConfig{})))
}
