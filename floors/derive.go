package floors

import (
	"slices"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Reach derives the tier a route reaches under its kind's rule:
// a routed client reaches dedicated; else a per-tenant resolver on every
// counted relation reaches namespace; else tenant-aware reaches tagged; else
// none. A route that names no counted relation never reaches namespace.
func Reach(rule KindRule, r Route) tenancy.Tier {
	if r.Routed {
		return tenancy.Dedicated
	}
	if !rule.NeverNamespace && allCountedPerTenant(rule, r) {
		return tenancy.Namespace
	}
	if r.TenantAware && !rule.NoTagged {
		if rule.TaggedNeedsScopedRelations && !allScoped(r.Relations) {
			return tenancy.None
		}
		return tenancy.Tagged
	}
	return tenancy.None
}

// EffectiveOrigin is the stronger of the route's declared origin and its
// kind's own: a declaration can raise an origin, never lower it.
func EffectiveOrigin(rule KindRule, r Route) tenancy.Origin {
	return max(rule.Origin, r.Origin)
}

// counts reports whether a relation counts towards namespace under rule.
func counts(rule KindRule, rel Relation) bool {
	return len(rule.Relations) == 0 || slices.Contains(rule.Relations, rel.Role)
}

func allCountedPerTenant(rule KindRule, r Route) bool {
	if rule.ResolverCountsOnlyWhenTenantAware && !r.TenantAware {
		return false
	}
	any := false
	for _, rel := range r.Relations {
		if !counts(rule, rel) {
			continue
		}
		if !rel.PerTenant {
			return false
		}
		any = true
	}
	return any
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
