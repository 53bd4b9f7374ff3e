package floors

import (
	"slices"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Decision is what a backend's rules decide for one route: the tier it
// reaches, and the scope an adapter applies on every call. The matrix and
// the adapters read the same value, so the tier printed is the scope
// enforced; an adapter never re-derives any of it from its own options.
type Decision struct {
	// Reached is the tier the route reaches (the matrix's reached column).
	Reached tenancy.Tier
	// NeedsTenant: a call with no tenant bound fails closed with
	// tenant_unbound. Off only for a route that separates no tenants.
	NeedsTenant bool
	// Tagged: records are stamped with the bound tenant and every read,
	// update and delete filters on it.
	Tagged bool
	// Routed: calls run on the bound tenant's own client.
	Routed bool
	// Global: the route holds deployment-wide state (fleet or
	// tenant-global) and runs with no tenant bound.
	Global bool
	// PerTenant lists the roles whose container is resolved for the bound
	// tenant. A relation wired per tenant whose role is missing here names
	// one shared container: its resolver is passed the zero tenant.
	PerTenant []string
}

// ResolvesPerTenant reports whether the container in role is resolved for
// the bound tenant (rather than shared by every tenant).
func (d Decision) ResolvesPerTenant(role string) bool { return slices.Contains(d.PerTenant, role) }

// decide is the one derivation of a route's tier and runtime scope under
// its kind's rule: a routed client reaches dedicated; else a per-tenant
// resolver on every counted relation reaches namespace; else tenant-aware
// reaches tagged; else none. A route that names no counted relation never
// reaches namespace.
func decide(rule KindRule, r Route) Decision {
	d := Decision{
		Routed: r.Routed,
		Tagged: r.TenantAware && !rule.NoTagged,
		Global: r.Fleet || r.TenantGlobal || rule.Fleet,
	}
	// ResolverCountsOnlyWhenTenantAware: the resolver is passed the tenant
	// only when the route is tenant-aware; otherwise it names one container.
	resolverGetsTenant := !rule.ResolverCountsOnlyWhenTenantAware || r.TenantAware
	counted, countedPerTenant := 0, 0
	for _, rel := range r.Relations {
		perTenant := rel.PerTenant && resolverGetsTenant
		if perTenant {
			d.PerTenant = append(d.PerTenant, rel.Role)
		}
		if counts(rule, rel) {
			counted++
			if perTenant {
				countedPerTenant++
			}
		}
	}
	d.NeedsTenant = r.Routed || r.TenantAware || len(d.PerTenant) > 0
	switch {
	case r.Routed:
		d.Reached = tenancy.Dedicated
	case !rule.NeverNamespace && counted > 0 && countedPerTenant == counted:
		d.Reached = tenancy.Namespace
	case d.Tagged && (!rule.TaggedNeedsScopedRelations || allScoped(r.Relations)):
		d.Reached = tenancy.Tagged
	default:
		d.Reached = tenancy.None
	}
	return d
}

// Decide is the decision for route r under its kind's rule in b. A kind b
// does not declare gets the default rule here; Check refuses such a route
// (wiring_invalid) before any call runs.
func (b Backend) Decide(r Route) Decision { return decide(b.Kinds[r.Kind], r) }
