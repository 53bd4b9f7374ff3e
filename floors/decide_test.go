package floors_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

func TestDecide(t *testing.T) {
	tbl := func(role string, perTenant bool) floors.Relation {
		return floors.Relation{Role: role, Name: role, PerTenant: perTenant}
	}
	late := floors.KindRule{Relations: []string{"table"}, ResolverCountsOnlyWhenTenantAware: true}
	for _, c := range []struct {
		name string
		rule floors.KindRule
		r    floors.Route
		want floors.Decision
	}{
		{"static", floors.KindRule{}, floors.Route{Relations: []floors.Relation{tbl("t", false)}},
			floors.Decision{Reached: tenancy.None}},
		{"tagged", floors.KindRule{}, floors.Route{TenantAware: true, Relations: []floors.Relation{tbl("t", false)}},
			floors.Decision{Reached: tenancy.Tagged, NeedsTenant: true, Tagged: true}},
		{"namespace", floors.KindRule{}, floors.Route{Relations: []floors.Relation{tbl("t", true)}},
			floors.Decision{Reached: tenancy.Namespace, NeedsTenant: true, PerTenant: []string{"t"}}},
		{"one static relation of two", floors.KindRule{}, floors.Route{Relations: []floors.Relation{tbl("r", true), tbl("w", false)}},
			floors.Decision{Reached: tenancy.None, NeedsTenant: true, PerTenant: []string{"r"}}},
		{"uncounted per-tenant relation still resolves per tenant", floors.KindRule{Relations: []string{"w"}},
			floors.Route{Relations: []floors.Relation{tbl("i", true), tbl("w", false)}},
			floors.Decision{Reached: tenancy.None, NeedsTenant: true, PerTenant: []string{"i"}}},
		{"routed", floors.KindRule{}, floors.Route{Routed: true, Relations: []floors.Relation{tbl("t", false)}},
			floors.Decision{Reached: tenancy.Dedicated, NeedsTenant: true, Routed: true}},
		{"late resolver, not tenant-aware: one shared container", late, floors.Route{Relations: []floors.Relation{tbl("table", true)}},
			floors.Decision{Reached: tenancy.None}},
		{"late resolver, tenant-aware", late, floors.Route{TenantAware: true, Relations: []floors.Relation{tbl("table", true)}},
			floors.Decision{Reached: tenancy.Namespace, NeedsTenant: true, Tagged: true, PerTenant: []string{"table"}}},
		{"no tagged tier", floors.KindRule{NoTagged: true}, floors.Route{TenantAware: true, Relations: []floors.Relation{tbl("t", false)}},
			floors.Decision{Reached: tenancy.None, NeedsTenant: true}},
		{"never namespace", floors.KindRule{NeverNamespace: true}, floors.Route{Relations: []floors.Relation{tbl("t", true)}},
			floors.Decision{Reached: tenancy.None, NeedsTenant: true, PerTenant: []string{"t"}}},
		{"fleet kind", floors.KindRule{Fleet: true}, floors.Route{},
			floors.Decision{Reached: tenancy.None, Global: true}},
		{"tenant-global route", floors.KindRule{}, floors.Route{TenantGlobal: true},
			floors.Decision{Reached: tenancy.None, Global: true}},
	} {
		r := c.r
		r.Kind = "k"
		got := floors.Backend{Kinds: map[floors.Kind]floors.KindRule{"k": c.rule}}.Decide(r)
		if got.Reached != c.want.Reached || got.NeedsTenant != c.want.NeedsTenant || got.Tagged != c.want.Tagged ||
			got.Routed != c.want.Routed || got.Global != c.want.Global || !slices.Equal(got.PerTenant, c.want.PerTenant) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		for _, rel := range c.r.Relations {
			if got.ResolvesPerTenant(rel.Role) != slices.Contains(c.want.PerTenant, rel.Role) {
				t.Errorf("%s: ResolvesPerTenant(%s) disagrees with PerTenant", c.name, rel.Role)
			}
		}
	}
}

// The matrix and the worker check read the decision: for any route, the
// row's tier is Decide's, and an unbound worker is refused exactly when
// the decision needs a tenant.
func TestCheckReadsTheDecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 1))
	flip := func() bool { return rng.IntN(2) == 0 }
	for i := range 2000 {
		rule := floors.KindRule{ResolverCountsOnlyWhenTenantAware: flip(), NeverNamespace: flip(), NoTagged: flip(),
			TaggedNeedsScopedRelations: flip()}
		if flip() {
			rule.Relations = []string{"a"}
		}
		r := floors.Route{Name: "r", Kind: "k", TenantAware: flip(), Routed: rng.IntN(4) == 0}
		for _, role := range []string{"a", "b"}[:rng.IntN(3)] {
			r.Relations = append(r.Relations, floors.Relation{Role: role, Name: role, PerTenant: flip(), Scoped: flip()})
		}
		b := floors.Backend{Name: "x", Ceiling: tenancy.Dedicated, Kinds: map[floors.Kind]floors.KindRule{"k": rule}}
		d := b.Decide(r)
		rep := floors.Check([]floors.Module{{Name: "m", Backend: b, Routes: []floors.Route{r}}},
			[]floors.Worker{{Name: "w", Module: "m", Route: "r", Binding: floors.Unbound}})
		if got := rep.Matrix.Rows[0].Reached; got != d.Reached || floors.Reach(rule, r) != d.Reached {
			t.Fatalf("case %d: matrix %s, Reach %s, Decide %s (%+v %+v)", i, got, floors.Reach(rule, r), d.Reached, rule, r)
		}
		refused := false
		for _, err := range rep.Errors {
			refused = refused || tenancy.CodeOf(err) == tenancy.CodeTenantGlobalRequired
		}
		if refused != d.NeedsTenant {
			t.Fatalf("case %d: unbound worker refused=%v, decision needs tenant=%v (%+v %+v)", i, refused, d.NeedsTenant, rule, r)
		}
	}
}
