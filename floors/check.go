package floors

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Warning is a finding that does not refuse the app; the caller logs it.
type Warning struct {
	Module  string
	Route   string
	Message string
}

func (w Warning) String() string { return w.Module + "/" + w.Route + ": " + w.Message }

// Report is the outcome of checking an app's wiring.
type Report struct {
	// Errors holds every violation, each a *tenancy.Error, in module,
	// route, worker order.
	Errors   []error
	Warnings []Warning
	Matrix   Matrix
}

// OK reports whether the wiring has no violation.
func (r Report) OK() bool { return len(r.Errors) == 0 }

// Check checks every module and every worker and reports every violation,
// not just the first. Precedence per route: an unknown origin, then the
// origin floor, then (per module) a capability mismatch, then the declared
// floor; fleet and tenant-global routes get their own rule instead of the
// declared floor.
func Check(modules []Module, workers []Worker) Report {
	return check(modules, workers, true)
}

// Verify is Check without building the matrix: what enforcement runs
// during fx.New, where only violations and warnings are needed.
func Verify(modules []Module, workers []Worker) Report {
	return check(modules, workers, false)
}

func check(modules []Module, workers []Worker, matrix bool) Report {
	var rep Report
	if matrix {
		n := 0
		for _, m := range modules {
			n += len(m.Routes)
		}
		rep.Matrix.Rows = make([]Row, 0, n)
	}
	for _, m := range modules {
		checkModule(&rep, m, matrix)
	}
	for _, w := range workers {
		checkWorker(&rep, modules, w)
	}
	return rep
}

func checkModule(rep *Report, m Module, matrix bool) {
	mismatch := m.Floor > m.Backend.Ceiling
	if mismatch {
		rep.Errors = append(rep.Errors, &tenancy.Error{
			Code: tenancy.ValidationFailed(m.Backend.Name), Module: m.Name, Backend: m.Backend.Name,
			Tiers: true, Reached: m.Backend.Ceiling, Required: m.Floor, Ceiling: m.Backend.Ceiling,
			CapabilityMismatch: true,
			Detail: fmt.Sprintf("declared floor %s is above what %s can ever reach (%s): no wiring can meet it",
				m.Floor, m.Backend.Name, m.Backend.Ceiling),
			Fix: fmt.Sprintf("lower RequiredIsolation to at most %s, or move the module to a backend whose ceiling is %s",
				m.Backend.Ceiling, m.Floor),
		})
	}
	if m.ConnBudget > 0 && m.WorstCaseConns > m.ConnBudget {
		rep.Errors = append(rep.Errors, &tenancy.Error{
			Code: tenancy.CodeConnectionBudgetExceeded, Module: m.Name, Backend: m.Backend.Name,
			Detail: fmt.Sprintf("the module's clients can open up to %d connections, over its declared budget of %d",
				m.WorstCaseConns, m.ConnBudget),
			Fix: fmt.Sprintf("lower the routed pool bound or the per-pool maximum connections until their product is at most %d, or raise the module's connection budget to %d",
				m.ConnBudget, m.WorstCaseConns),
		})
	}
	for _, r := range m.Routes {
		row, errs, warns := checkRoute(m, r, mismatch)
		if matrix {
			rep.Matrix.Rows = append(rep.Matrix.Rows, row)
		}
		rep.Errors = append(rep.Errors, errs...)
		rep.Warnings = append(rep.Warnings, warns...)
	}
}

func checkRoute(m Module, r Route, mismatch bool) (Row, []error, []Warning) {
	rule, known := m.Backend.Kinds[r.Kind]
	origin := effectiveOrigin(rule, r)
	decision := decide(rule, r)
	reached := decision.Reached
	c := routeCheck{m: m, r: r, rule: rule,
		row: Row{
			Module: m.Name, Backend: m.Backend.Name, Route: r.Name, Kind: r.Kind,
			Reached: reached, Origin: origin, Declared: m.Floor, Ceiling: m.Backend.Ceiling,
			WorstCaseConns: m.WorstCaseConns, Placement: m.Placement, Verdict: VerdictOK,
		},
		base: tenancy.Error{
			Module: m.Name, Backend: m.Backend.Name, Route: r.Name, Tiers: true,
			Reached: reached, Ceiling: m.Backend.Ceiling, Origin: origin,
		},
	}
	if c.malformed(known) {
		return c.row, c.errs, nil
	}
	switch {
	case r.Fleet || rule.Fleet:
		c.row.Scope = "fleet"
	case r.TenantGlobal:
		c.row.Scope = "tenant-global"
	}
	c.tiers(decision.Global, mismatch)
	if mismatch && c.row.Verdict == VerdictOK {
		// The module-level error carries it; the row shows the module is refused.
		c.row.Verdict = string(tenancy.ValidationFailed(m.Backend.Name))
	}

	var warns []Warning
	// The marker is redundant only where the route keeps its tier without
	// it: a per-tenant outbox needs it to reach namespace at all.
	if r.TenantAware && reached > tenancy.Tagged && m.Placement == tenancy.None && markerRedundant(rule, r, reached) {
		w := Warning{Module: m.Name, Route: r.Name, Message: fmt.Sprintf(
			"route is tenant-aware and also reaches %s: the tenant marker is redundant, kept as defence in depth", reached)}
		warns = append(warns, w)
		c.row.Warnings = append(c.row.Warnings, w.Message)
	}
	return c.row, c.errs, warns
}

// routeCheck is one route's check in progress: its row and refusals.
type routeCheck struct {
	m    Module
	r    Route
	rule KindRule
	row  Row
	// base is every refusal's common part; refuse adds code and detail.
	base tenancy.Error
	errs []error
}

func (c *routeCheck) refuse(e tenancy.Error) {
	c.errs = append(c.errs, &e)
	if c.row.Verdict == VerdictOK {
		c.row.Verdict = string(e.Code)
	}
}

// malformed refuses a route no tier can be judged for: an undeclared
// kind, a tier above the ceiling, an unknown origin. It sets the row's
// origin floor.
func (c *routeCheck) malformed(known bool) bool {
	m, r, reached, origin := c.m, c.r, c.row.Reached, c.row.Origin
	e := c.base
	if !known {
		e.Code, e.Tiers = tenancy.CodeWiringInvalid, false
		e.Detail = fmt.Sprintf("route kind %q is not declared by backend %s", r.Kind, m.Backend.Name)
		e.Fix = "use a route constructor of the backend's package; a backend must state the rules of every kind it ships"
		c.refuse(e)
		return true
	}
	if reached > m.Backend.Ceiling {
		e.Code, e.Required = tenancy.CodeWiringInvalid, reached
		e.Detail = fmt.Sprintf("route claims %s, above what %s can reach (%s)", reached, m.Backend.Name, m.Backend.Ceiling)
		e.Fix = "build the route with the backend's own constructors; this backend has no routed client"
		c.refuse(e)
		return true
	}
	originFloor, err := origin.Floor()
	c.row.OriginFloor = originFloor
	if err != nil {
		e.Code, e.Tiers = tenancy.CodeStatementOriginUnknown, false
		e.Detail = fmt.Sprintf("route declares an unknown statement origin %s", origin)
		e.Fix = "declare structured, compiled or raw"
		c.refuse(e)
		return true
	}
	return false
}

// tiers refuses a route whose tier misses its origin floor or the
// module's floor, a tagged route of a kind with no tagged tier, and a
// tenant-scoped global (fleet or tenant-global) route. Under a capability
// mismatch the module-level error carries the floor.
func (c *routeCheck) tiers(global, mismatch bool) {
	m, r, rule := c.m, c.r, c.rule
	reached, origin, originFloor := c.row.Reached, c.row.Origin, c.row.OriginFloor
	if reached < originFloor {
		e := c.base
		e.Code, e.Required = tenancy.CodeStatementOriginFloor, originFloor
		e.Detail = fmt.Sprintf("%s statement text needs at least %s, and this route reaches %s; no declaration lowers an origin floor",
			origin, originFloor, reached)
		e.Fix = fixFor(m.Backend, rule, r, originFloor)
		c.refuse(e)
	}
	if r.TenantAware && rule.NoTagged {
		e := c.base
		e.Code, e.Required = tenancy.ValidationFailed(m.Backend.Name), m.Floor
		e.Detail = fmt.Sprintf("%s %s routes have no tagged tier (nothing filters records by a tenant marker), so TenantAware would isolate nothing",
			m.Backend.Name, r.Kind)
		e.Fix = "drop TenantAware and resolve the container per tenant (namespace) or route the client per tenant (dedicated)"
		c.refuse(e)
	}
	switch {
	case global && tenantScoped(r):
		e := c.base
		e.Code, e.Required = tenancy.CodeGlobalTenantScoped, tenancy.None
		what := "tenant-global"
		if c.row.Scope == "fleet" {
			e.Code, what = tenancy.CodeFleetTenantScoped, "fleet"
		}
		e.Detail = fmt.Sprintf("a %s route holds deployment-wide state and runs with no tenant bound, but this one is tenant-scoped (%s)",
			what, scopeReasons(r))
		e.Fix = "drop TenantAware, the per-tenant resolver and the routed client from this route, or stop marking it " + what + " and bind a tenant"
		c.refuse(e)
	case !global && !mismatch && reached < m.Floor && reached >= originFloor:
		e := c.base
		e.Code, e.Required = tenancy.ValidationFailed(m.Backend.Name), m.Floor
		e.Detail = fmt.Sprintf("route reaches %s, under the module's declared floor %s", reached, m.Floor)
		e.Fix = fixFor(m.Backend, rule, r, m.Floor)
		c.refuse(e)
	}
}

// markerRedundant reports whether r reaches reached without TenantAware.
func markerRedundant(rule KindRule, r Route, reached tenancy.Tier) bool {
	r.TenantAware = false
	return decide(rule, r).Reached >= reached
}

// fixFor says what would lift route r to tier want on backend b.
func fixFor(b Backend, rule KindRule, r Route, want tenancy.Tier) string {
	return remedyFor(b, rule, r, want).text
}

// remedy is what lifts a route to a tier: the change, which a test can
// apply and hand to decide, and the sentence a refusal says.
type remedy struct {
	aware, perTenant, routed bool
	// unreachable: no change of the route reaches the tier on this backend.
	unreachable bool
	text        string
}

// apply is r with the remedy's change made.
func (m remedy) apply(r Route) Route {
	r.TenantAware = r.TenantAware || m.aware
	r.Routed = r.Routed || m.routed
	if m.perTenant {
		r.Relations = slices.Clone(r.Relations)
		for i := range r.Relations {
			r.Relations[i].PerTenant = true
		}
	}
	return r
}

func remedyFor(b Backend, rule KindRule, r Route, want tenancy.Tier) remedy {
	routed := ", or route the client per tenant"
	if b.Ceiling < tenancy.Dedicated {
		routed = ""
	}
	switch want {
	case tenancy.Tagged:
		switch {
		case rule.NoTagged && !rule.NeverNamespace:
			return remedy{perTenant: true, text: "resolve the container per tenant (namespace)" + routed}
		case rule.NoTagged:
			return remedyFor(b, rule, r, tenancy.Dedicated)
		case rule.TaggedNeedsScopedRelations && !allScoped(r.Relations):
			return remedy{aware: true, perTenant: true, text: "mark the route TenantAware and scope every relation it names (tenant-aware or per tenant)" + routed}
		}
		return remedy{aware: true, text: "mark the route TenantAware or resolve every relation per tenant" + routed}
	case tenancy.Namespace:
		if rule.NeverNamespace {
			if routed == "" {
				return remedy{unreachable: true, text: fmt.Sprintf("%s routes never reach namespace on %s: lower the floor", r.Kind, b.Name)}
			}
			return remedy{routed: true, text: fmt.Sprintf("%s routes never reach namespace: route the client per tenant (dedicated)", r.Kind)}
		}
		if rule.ResolverCountsOnlyWhenTenantAware && !r.TenantAware {
			return remedy{aware: true, perTenant: true, text: "mark the route TenantAware (its resolver is passed the tenant only then) and resolve every relation per tenant" + routed}
		}
		if missing := staticCounted(rule, r); len(missing) > 0 {
			return remedy{perTenant: true, text: "give a per-tenant resolver to every relation the route names (static now: " +
				strings.Join(missing, ", ") + ")" + routed}
		}
		return remedy{perTenant: true, text: "give the route a per-tenant resolver on every relation" + routed}
	default:
		if routed == "" {
			return remedy{unreachable: true, text: fmt.Sprintf("%s has no per-tenant connections (ceiling %s): move the route to a backend with a routed client", b.Name, b.Ceiling)}
		}
		return remedy{routed: true, text: "run the route on a routed client (per-tenant credentials)"}
	}
}

func scopeReasons(r Route) string {
	var why []string
	if r.TenantAware {
		why = append(why, "tenant-aware")
	}
	for _, rel := range r.Relations {
		if rel.PerTenant {
			why = append(why, "per-tenant "+rel.Role)
			break
		}
	}
	if r.Routed {
		why = append(why, "routed client")
	}
	return strings.Join(why, ", ")
}

func checkWorker(rep *Report, modules []Module, w Worker) {
	for _, m := range modules {
		if m.Name != w.Module {
			continue
		}
		for _, r := range m.Routes {
			if r.Name != w.Route {
				continue
			}
			rule := m.Backend.Kinds[r.Kind]
			d := decide(rule, r)
			if w.Binding.readsBound() || !d.NeedsTenant {
				return
			}
			reason := "a tenant-aware resource"
			if r.Routed {
				reason = "a routed client, with no tenant to route by"
			} else if !r.TenantAware {
				reason = "per-tenant containers"
			}
			// The route isolates at its own tier only for a bound tenant: an
			// unbound pass reads every tenant's data, which is tier none. So
			// the worker reaches none and needs the route's tier.
			tier := d.Reached
			rep.Errors = append(rep.Errors, &tenancy.Error{
				Code: tenancy.CodeTenantGlobalRequired, Module: m.Name, Backend: m.Backend.Name,
				Route: r.Name, Tiers: true, Reached: tenancy.None, Required: tier,
				Ceiling: m.Backend.Ceiling, Origin: effectiveOrigin(rule, r),
				Detail: fmt.Sprintf("worker %q (%s) would drain %s with no tenant bound: the route is %s, and a pass reads at %s only with a tenant bound",
					w.Name, w.Binding, reason, tier, tier),
				Fix: fmt.Sprintf("run worker %q sharded (set Tenants in its config: one pass per assigned tenant, each bound), "+
					"or make route %q tenant-global: drop what scopes it per tenant (%s)", w.Name, r.Name, scopeReasons(r)),
			})
			return
		}
	}
	rep.Errors = append(rep.Errors, &tenancy.Error{
		Code: tenancy.CodeWorkerRouteUnknown, Module: w.Module, Route: w.Route,
		Detail: fmt.Sprintf("worker %q drains a route no module declares", w.Name),
		Fix:    "register the worker against a route of a module included in the app",
	})
}
