package floors

import (
	"slices"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Reach is the tier a route reaches under its kind's rule: decide's
// Reached.
func Reach(rule KindRule, r Route) tenancy.Tier { return decide(rule, r).Reached }

// effectiveOrigin is the stronger of the route's declared origin and its
// kind's own: a declaration can raise an origin, never lower it.
func effectiveOrigin(rule KindRule, r Route) tenancy.Origin {
	return max(rule.Origin, r.Origin)
}

// counts reports whether a relation counts towards namespace under rule.
func counts(rule KindRule, rel Relation) bool {
	return len(rule.Relations) == 0 || slices.Contains(rule.Relations, rel.Role)
}

// staticCounted names the counted relations without a per-tenant resolver:
// what stands between the route and namespace.
func staticCounted(rule KindRule, r Route) []string {
	var out []string
	for _, rel := range r.Relations {
		if counts(rule, rel) && !rel.PerTenant {
			out = append(out, rel.Role+" ("+rel.Name+")")
		}
	}
	return out
}

func allScoped(rels []Relation) bool {
	if len(rels) == 0 {
		return false
	}
	for _, rel := range rels {
		if !rel.Scoped && !rel.PerTenant {
			return false
		}
	}
	return true
}

// tenantScoped reports whether a route separates tenants in any way at all:
// what a fleet or tenant-global route must not do, and what an unbound
// worker must not drain.
func tenantScoped(r Route) bool {
	if r.Routed || r.TenantAware {
		return true
	}
	for _, rel := range r.Relations {
		if rel.PerTenant {
			return true
		}
	}
	return false
}
