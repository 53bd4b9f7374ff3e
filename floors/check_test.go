package floors_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// plain is a backend with one default-rule kind over two relations.
func plain(ceiling tenancy.Tier) floors.Backend {
	return floors.Backend{Name: "demo", Ceiling: ceiling, Kinds: map[floors.Kind]floors.KindRule{"document": {}}}
}

type resolver int

const (
	resolverNone resolver = iota
	resolverSome
	resolverAll
)

func (r resolver) String() string { return [...]string{"none", "some", "all"}[r] }

func route(routed bool, res resolver, aware bool, origin tenancy.Origin, fleet, global bool) floors.Route {
	return floors.Route{
		Name: "orders", Kind: "document", Routed: routed, TenantAware: aware, Origin: origin,
		Fleet: fleet, TenantGlobal: global,
		Relations: []floors.Relation{
			{Role: "read", Name: "orders", PerTenant: res >= resolverSome},
			{Role: "write", Name: "orders", PerTenant: res == resolverAll},
		},
	}
}

// expected is the oracle: the tier rules (how a route reaches its tier, the
// floors, and the deployment-wide routes) written out plainly, independent
// of the engine's code.
func expected(routed bool, res resolver, aware bool, origin tenancy.Origin, declared, ceiling tenancy.Tier, fleet, global bool) (tenancy.Tier, []tenancy.Code, bool) {
	reached := tenancy.None
	switch {
	case routed:
		reached = tenancy.Dedicated
	case res == resolverAll:
		reached = tenancy.Namespace
	case aware:
		reached = tenancy.Tagged
	}
	var codes []tenancy.Code
	mismatch := declared > ceiling
	if mismatch {
		codes = append(codes, "demo_tenancy_validation_failed")
	}
	if reached > ceiling {
		return reached, append(codes, tenancy.CodeWiringInvalid), mismatch
	}
	originFloor := map[tenancy.Origin]tenancy.Tier{tenancy.Structured: tenancy.None, tenancy.Compiled: tenancy.Namespace, tenancy.Raw: tenancy.Dedicated}[origin]
	originMiss := reached < originFloor
	if originMiss {
		codes = append(codes, tenancy.CodeStatementOriginFloor)
	}
	scoped := routed || aware || res != resolverNone
	switch {
	case fleet && scoped:
		codes = append(codes, tenancy.CodeFleetTenantScoped)
	case global && scoped:
		codes = append(codes, tenancy.CodeGlobalTenantScoped)
	case fleet || global:
	case !mismatch && !originMiss && reached < declared:
		codes = append(codes, "demo_tenancy_validation_failed")
	}
	return reached, codes, mismatch
}

// TestCheckWholeSpace enumerates routed × resolver on all/some/none ×
// tenant-aware × origin × declared floor × ceiling × fleet × tenant-global.
func TestCheckWholeSpace(t *testing.T) {
	n := 0
	for _, routed := range []bool{false, true} {
		for _, res := range []resolver{resolverNone, resolverSome, resolverAll} {
			for _, aware := range []bool{false, true} {
				for _, origin := range tenancy.Origins {
					for _, declared := range tenancy.Tiers {
						for _, ceiling := range []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated} {
							for _, fleet := range []bool{false, true} {
								for _, global := range []bool{false, true} {
									n++
									name := fmt.Sprintf("routed=%v/resolver=%v/aware=%v/origin=%v/floor=%v/ceiling=%v/fleet=%v/global=%v",
										routed, res, aware, origin, declared, ceiling, fleet, global)
									r := route(routed, res, aware, origin, fleet, global)
									rep := floors.Check([]floors.Module{{Name: "m", Backend: plain(ceiling), Floor: declared, Routes: []floors.Route{r}}}, nil)
									reached, want, mismatch := expected(routed, res, aware, origin, declared, ceiling, fleet, global)
									got := tenancy.Codes(errors.Join(rep.Errors...))
									slices.Sort(got)
									slices.Sort(want)
									if !slices.Equal(got, want) {
										t.Errorf("%s: codes %v, want %v\n%v", name, got, want, rep.Errors)
										continue
									}
									if rep.Matrix.Rows[0].Reached != reached {
										t.Errorf("%s: reached %v, want %v", name, rep.Matrix.Rows[0].Reached, reached)
									}
									if gotMismatch := errors.Is(errors.Join(rep.Errors...), tenancy.ErrCapabilityMismatch); gotMismatch != mismatch {
										t.Errorf("%s: capability mismatch %v, want %v", name, gotMismatch, mismatch)
									}
									wantVerdict := floors.VerdictOK
									if len(want) > 0 {
										wantVerdict = "refused"
									}
									if gotVerdict := rep.Matrix.Rows[0].Verdict; (gotVerdict == floors.VerdictOK) != (wantVerdict == floors.VerdictOK) {
										t.Errorf("%s: verdict %q with codes %v", name, gotVerdict, want)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if n != 2*3*2*3*4*2*2*2 {
		t.Fatalf("enumerated %d cases", n)
	}
}

// TestNoWiringBelowFloorIsAccepted is the property: random modules of many
// routes; whenever the weakest tenant-scoped route is below the declared
// floor, the check refuses.
func TestNoWiringBelowFloorIsAccepted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	backend := postgresLike()
	kinds := []floors.Kind{"document", "search", "outbox", "hub_search", "dynamic_read"}
	below, accepted := 0, 0
	for i := range 20000 {
		m := floors.Module{Name: "m", Backend: backend, Floor: tenancy.Tiers[rng.IntN(4)]}
		weakest := tenancy.Dedicated
		for j := range 1 + rng.IntN(5) {
			r := floors.Route{Name: fmt.Sprintf("r%d", j), Kind: kinds[rng.IntN(len(kinds))],
				Routed: rng.IntN(4) == 0, TenantAware: rng.IntN(2) == 0, Origin: tenancy.Origins[rng.IntN(3)]}
			for _, role := range []string{"read", "write", "history", "heap", "index", "table", "schema"} {
				if rng.IntN(2) == 0 {
					r.Relations = append(r.Relations, floors.Relation{Role: role, Name: role, PerTenant: rng.IntN(3) > 0})
				}
			}
			m.Routes = append(m.Routes, r)
			weakest = min(weakest, independentReach(r))
		}
		rep := floors.Check([]floors.Module{m}, nil)
		if weakest < m.Floor {
			below++
		}
		if rep.OK() {
			accepted++
		}
		if weakest < m.Floor && rep.OK() {
			t.Fatalf("case %d: weakest route reaches %v under floor %v and was accepted: %+v", i, weakest, m.Floor, m)
		}
		if rep.OK() {
			for _, row := range rep.Matrix.Rows {
				if row.Reached < row.OriginFloor {
					t.Fatalf("case %d: route %s under its origin floor accepted", i, row.Route)
				}
			}
		}
	}
	// Guard against a vacuous property: both outcomes must occur often.
	if below < 1000 || accepted < 1000 {
		t.Fatalf("generator too narrow: %d below floor, %d accepted", below, accepted)
	}
}

// independentReach restates postgresLike's rules without the engine.
func independentReach(r floors.Route) tenancy.Tier {
	if r.Routed {
		return tenancy.Dedicated
	}
	counts := map[floors.Kind][]string{
		"document": {"read", "write", "history"}, "search": {"read", "heap", "index"},
		"outbox": {"table"}, "dynamic_read": {"schema"},
	}
	perTenant, any := true, false
	for _, rel := range r.Relations {
		if slices.Contains(counts[r.Kind], rel.Role) {
			any = true
			perTenant = perTenant && rel.PerTenant
		}
	}
	namespaceOK := r.Kind != "hub_search" && (r.Kind != "outbox" || r.TenantAware)
	if namespaceOK && any && perTenant {
		return tenancy.Namespace
	}
	if r.TenantAware {
		return tenancy.Tagged
	}
	return tenancy.None
}

func postgresLike() floors.Backend {
	return floors.Backend{Name: "postgres", Ceiling: tenancy.Dedicated, Kinds: map[floors.Kind]floors.KindRule{
		"document":     {Relations: []string{"read", "write", "history"}},
		"search":       {Relations: []string{"read", "heap", "index"}},
		"hub_search":   {NeverNamespace: true},
		"outbox":       {Relations: []string{"table"}, ResolverCountsOnlyWhenTenantAware: true},
		"dynamic_read": {Relations: []string{"schema"}, Origin: tenancy.Compiled},
		"federated":    {NeverNamespace: true, TaggedNeedsScopedRelations: true},
		"topic":        {NoTagged: true},
		"fleet":        {Fleet: true},
	}}
}

func TestBackendExceptions(t *testing.T) {
	b := postgresLike()
	perTenant := func(roles ...string) []floors.Relation {
		var out []floors.Relation
		for _, r := range roles {
			out = append(out, floors.Relation{Role: r, Name: r, PerTenant: true})
		}
		return out
	}
	cases := []struct {
		name  string
		route floors.Route
		floor tenancy.Tier
		want  tenancy.Tier
		codes []tenancy.Code
	}{
		{"search counts its index", floors.Route{Kind: "search", Relations: append(perTenant("read", "heap"), floors.Relation{Role: "index", Name: "idx"})}, tenancy.Namespace, tenancy.None, []tenancy.Code{"postgres_tenancy_validation_failed"}},
		{"search with every relation per tenant", floors.Route{Kind: "search", Relations: perTenant("read", "heap", "index")}, tenancy.Namespace, tenancy.Namespace, nil},
		{"static history counts even when unused", floors.Route{Kind: "document", TenantAware: true, Relations: append(perTenant("read", "write"), floors.Relation{Role: "history", Name: "h"})}, tenancy.Namespace, tenancy.Tagged, []tenancy.Code{"postgres_tenancy_validation_failed"}},
		{"outbox resolver ignored unless tenant-aware", floors.Route{Kind: "outbox", Relations: perTenant("table")}, tenancy.Tagged, tenancy.None, []tenancy.Code{"postgres_tenancy_validation_failed"}},
		{"tenant-aware outbox resolver counts", floors.Route{Kind: "outbox", TenantAware: true, Relations: perTenant("table")}, tenancy.Namespace, tenancy.Namespace, nil},
		{"hub search never namespace", floors.Route{Kind: "hub_search", TenantAware: true, Relations: perTenant("read")}, tenancy.Namespace, tenancy.Tagged, []tenancy.Code{"postgres_tenancy_validation_failed"}},
		{"dynamic read tagged refused by origin", floors.Route{Kind: "dynamic_read", TenantAware: true, Relations: []floors.Relation{{Role: "schema", Name: "s"}}}, tenancy.None, tenancy.Tagged, []tenancy.Code{tenancy.CodeStatementOriginFloor}},
		{"dynamic read origin cannot be lowered", floors.Route{Kind: "dynamic_read", Origin: tenancy.Structured}, tenancy.None, tenancy.None, []tenancy.Code{tenancy.CodeStatementOriginFloor}},
		{"dynamic read per-tenant schema", floors.Route{Kind: "dynamic_read", Relations: perTenant("schema")}, tenancy.Namespace, tenancy.Namespace, nil},
		{"federated tagged when every leg scoped", floors.Route{Kind: "federated", TenantAware: true, Relations: []floors.Relation{{Role: "leg", Scoped: true}, {Role: "leg", PerTenant: true}}}, tenancy.Tagged, tenancy.Tagged, nil},
		{"federated none with an unscoped leg", floors.Route{Kind: "federated", TenantAware: true, Relations: []floors.Relation{{Role: "leg", Scoped: true}, {Role: "leg"}}}, tenancy.Tagged, tenancy.None, []tenancy.Code{"postgres_tenancy_validation_failed"}},
		{"topic refuses tenant-aware", floors.Route{Kind: "topic", TenantAware: true, Relations: []floors.Relation{{Role: "topic"}}}, tenancy.None, tenancy.None, []tenancy.Code{"postgres_tenancy_validation_failed"}},
		{"fleet kind tenant-scoped", floors.Route{Kind: "fleet", TenantAware: true}, tenancy.Dedicated, tenancy.Tagged, []tenancy.Code{tenancy.CodeFleetTenantScoped}},
		{"fleet kind left out of the floor", floors.Route{Kind: "fleet"}, tenancy.Dedicated, tenancy.None, nil},
		{"undeclared kind", floors.Route{Kind: "mystery"}, tenancy.None, tenancy.None, []tenancy.Code{tenancy.CodeWiringInvalid}},
		{"unknown origin", floors.Route{Kind: "document", Origin: 9}, tenancy.None, tenancy.None, []tenancy.Code{tenancy.CodeStatementOriginUnknown}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.route.Name = "r"
			rep := floors.Check([]floors.Module{{Name: "m", Backend: b, Floor: c.floor, Routes: []floors.Route{c.route}}}, nil)
			if got := tenancy.Codes(errors.Join(rep.Errors...)); !slices.Equal(got, c.codes) {
				t.Fatalf("codes %v, want %v: %v", got, c.codes, rep.Errors)
			}
			if got := rep.Matrix.Rows[0].Reached; got != c.want {
				t.Fatalf("reached %v, want %v", got, c.want)
			}
		})
	}
}

func TestWorkers(t *testing.T) {
	b := postgresLike()
	m := floors.Module{Name: "msg", Backend: b, Routes: []floors.Route{
		{Name: "outbox", Kind: "outbox"},
		{Name: "aware_outbox", Kind: "outbox", TenantAware: true},
		{Name: "routed_outbox", Kind: "outbox", Routed: true},
		{Name: "static_resolver_outbox", Kind: "outbox", Relations: []floors.Relation{{Role: "table", PerTenant: true}}},
		{Name: "per_tenant_docs", Kind: "document", Relations: []floors.Relation{{Role: "read", PerTenant: true}}},
	}}
	cases := []struct {
		route   string
		binding floors.Binding
		code    tenancy.Code
	}{
		{"outbox", floors.PerRow, ""},
		{"outbox", floors.Unbound, ""},
		{"aware_outbox", floors.PerRow, tenancy.CodeTenantGlobalRequired},
		{"aware_outbox", floors.FromHeaders, tenancy.CodeTenantGlobalRequired},
		{"aware_outbox", floors.Sharded, ""},
		{"routed_outbox", floors.Unbound, tenancy.CodeTenantGlobalRequired},
		{"routed_outbox", floors.Sharded, ""},
		{"static_resolver_outbox", floors.Unbound, ""},
		{"per_tenant_docs", floors.Unbound, tenancy.CodeTenantGlobalRequired},
		{"missing", floors.Sharded, tenancy.CodeWorkerRouteUnknown},
	}
	for _, c := range cases {
		t.Run(c.route+"/"+c.binding.String(), func(t *testing.T) {
			rep := floors.Check([]floors.Module{m}, []floors.Worker{{Name: "w", Module: "msg", Route: c.route, Binding: c.binding}})
			got := tenancy.CodeOf(errors.Join(rep.Errors...))
			if got != c.code {
				t.Fatalf("code %q, want %q: %v", got, c.code, rep.Errors)
			}
		})
	}
}

func TestEveryViolationReportedAndWarnings(t *testing.T) {
	m := floors.Module{Name: "m", Backend: postgresLike(), Floor: tenancy.Namespace, Routes: []floors.Route{
		{Name: "a", Kind: "document", TenantAware: true},
		{Name: "b", Kind: "document", Origin: tenancy.Raw},
		{Name: "c", Kind: "document", TenantAware: true, Relations: []floors.Relation{{Role: "read", PerTenant: true}}},
	}}
	rep := floors.Check([]floors.Module{m}, nil)
	got := tenancy.Codes(errors.Join(rep.Errors...))
	want := []tenancy.Code{"postgres_tenancy_validation_failed", tenancy.CodeStatementOriginFloor}
	if !slices.Equal(got, want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0].Route != "c" {
		t.Fatalf("warnings %v, want one for route c", rep.Warnings)
	}
	var e *tenancy.Error
	if !errors.As(rep.Errors[0], &e) || e.Module != "m" || e.Route != "a" || e.Reached != tenancy.Tagged || e.Required != tenancy.Namespace || e.Fix == "" {
		t.Fatalf("first error lacks its fields: %+v", e)
	}
}

func TestConnectionBudget(t *testing.T) {
	m := floors.Module{Name: "m", Backend: postgresLike(), ConnBudget: 100, WorstCaseConns: 64 * 4}
	if got := tenancy.CodeOf(errors.Join(floors.Check([]floors.Module{m}, nil).Errors...)); got != tenancy.CodeConnectionBudgetExceeded {
		t.Fatalf("code %q", got)
	}
	m.WorstCaseConns = 100
	if rep := floors.Check([]floors.Module{m}, nil); !rep.OK() {
		t.Fatalf("budget met but refused: %v", rep.Errors)
	}
}

// TestMarkerWarningOnlyWhenRedundant: the redundant-marker warning names
// routes that keep their tier without TenantAware, never one that needs
// it (a per-tenant outbox's resolver counts only when it is tenant-aware,
// so dropping the marker as the warning suggests would be refused).
func TestMarkerWarningOnlyWhenRedundant(t *testing.T) {
	perTenant := []floors.Relation{{Role: "table", Name: "t", PerTenant: true}}
	m := floors.Module{Name: "m", Backend: postgresLike(), Floor: tenancy.Namespace, Routes: []floors.Route{
		{Name: "outbox", Kind: "outbox", TenantAware: true, Relations: perTenant},
		{Name: "docs", Kind: "document", TenantAware: true, Relations: []floors.Relation{{Role: "read", Name: "d", PerTenant: true}}},
		{Name: "routed_outbox", Kind: "outbox", TenantAware: true, Routed: true},
	}}
	rep := floors.Check([]floors.Module{m}, nil)
	if !rep.OK() {
		t.Fatal(rep.Errors)
	}
	var warned []string
	for _, w := range rep.Warnings {
		warned = append(warned, w.Route)
	}
	if !slices.Equal(warned, []string{"docs", "routed_outbox"}) {
		t.Fatalf("warnings on %v, want docs and routed_outbox only", warned)
	}
	// The warning is true: without the marker the outbox is refused.
	m.Routes[0].TenantAware = false
	if rep := floors.Check([]floors.Module{m}, nil); rep.OK() {
		t.Fatal("the outbox without its marker was accepted under namespace")
	}
}
