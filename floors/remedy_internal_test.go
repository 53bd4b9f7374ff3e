package floors

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRemedyReachesTheTier: for random kind rules and routes, the change a
// refusal's fix names, applied to the route, makes Decide reach the tier
// asked for (or more); a fix that says no change can reach it is said only
// where no shape of the kind reaches it.
func TestRemedyReachesTheTier(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	roles := []string{"read", "write", "index"}
	for i := range 20000 {
		// No rule refuses the marker yet passes its resolver the tenant
		// only with it: NoTagged excludes ResolverCountsOnlyWhenTenantAware.
		rule := KindRule{
			NoTagged:                          r.IntN(4) == 0,
			NeverNamespace:                    r.IntN(4) == 0,
			ResolverCountsOnlyWhenTenantAware: r.IntN(3) == 0,
			TaggedNeedsScopedRelations:        r.IntN(4) == 0,
			Relations:                         roles[:r.IntN(len(roles)+1)],
		}
		if rule.NoTagged {
			rule.ResolverCountsOnlyWhenTenantAware = false
		}
		ceiling := []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated}[r.IntN(2)]
		b := Backend{Name: "b", Ceiling: ceiling, Kinds: map[Kind]KindRule{"k": rule}}
		route := Route{Name: "r", Kind: "k", TenantAware: r.IntN(2) == 0}
		names := rule.Relations
		if len(names) == 0 {
			names = roles[:1+r.IntN(len(roles))]
		}
		for _, role := range names {
			route.Relations = append(route.Relations, Relation{Role: role, Name: role, PerTenant: r.IntN(2) == 0, Scoped: r.IntN(3) == 0})
		}
		for _, want := range []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated} {
			if decide(rule, route).Reached >= want {
				continue // no refusal, no fix
			}
			m := remedyFor(b, rule, route, want)
			desc := fmt.Sprintf("case %d: rule %+v ceiling %s route %+v want %s: fix %q", i, rule, ceiling, route, want, m.text)
			if m.unreachable {
				if b.Reaches("k", want) {
					t.Fatalf("%s: says unreachable, but a shape of the kind reaches it", desc)
				}
				continue
			}
			if got := decide(rule, m.apply(route)).Reached; got < want {
				t.Fatalf("%s: applied, the route reaches %s", desc, got)
			}
		}
	}
}

// TestOnlyShardedReadsBound: a sharded worker is the only binding that reads
// its resource with a tenant bound, so the only one a tenant-scoped route
// admits without tenant_global_required.
func TestOnlyShardedReadsBound(t *testing.T) {
	for _, b := range []Binding{Unbound, PerRow, FromHeaders, Sharded, Sharded + 1} {
		if b.readsBound() != (b == Sharded) {
			t.Errorf("Binding %s readsBound = %v", b, b.readsBound())
		}
	}
}
