package modules

import (
	"context"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Gate is the entry every call of one route goes through, for a backend
// built on the kit: the tenant bound to the call (or tenant_unbound on a
// tenant-scoped route), the suspension check (tenant_suspended, naming
// the backend, module and route) with the call held in flight until its
// end (so Tenants.Offboard waits for it) and the call's span and metrics. A
// backend that enters each call through its route's Gate honours
// Tenants.Suspend and the app's telemetry with no code of its own.
type Gate struct {
	// Decision is the rules' decision for the route.
	Decision floors.Decision
	rules    floors.Backend
	module   string
	route    string
	susp     *Suspensions
	tel      *telemetry.Route
	// optional: see GateSpec.TenantOptional.
	optional bool
	// share is the module's TenantShare bound, nil when it has none.
	share *tenantShare
}

// NewGate decides r by rules and builds its gate from what the module's
// core took from the app (in).
func NewGate(in LifecycleIn, rules floors.Backend, module string, r floors.Route) *Gate {
	d := rules.Decide(r)
	return &Gate{Decision: d, rules: rules, module: module, route: r.Name, susp: in.Suspensions, share: in.Suspensions.shareOf(module),
		tel: in.Telemetry.Route(telemetry.RouteInfo{Backend: rules.Name, Module: module, Route: r.Name, Kind: string(r.Kind), Reached: d.Reached})}
}

// Enter begins a call (see Entry for its steps): the tenant it runs for
// (zero on a route that needs none), the context carrying its span, and
// end, which the call runs with its outcome when it is over. A refusal ends the call itself and returns
// the coded error; end is then nil.
func (g *Gate) Enter(ctx context.Context) (context.Context, tenancy.ID, func(error), error) {
	id, _ := tenancy.FromContext(ctx)
	ctx, call := g.tel.Start(ctx, id)
	// The same steps as every backend's Entry, with nothing to reach.
	id, out, err := g.admit(ctx, true)
	if err != nil {
		return ctx, id, nil, call.Fail(err)
	}
	return ctx, id, func(err error) { out(); call.End(err) }, nil
}
