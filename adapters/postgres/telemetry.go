package postgres

import (
	"context"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// instrument builds every route's instruments when the app gave
// telemetry; without, c.tel stays nil and a call checks only that.
func (c *Client) instrument(t *telemetry.Telemetry) {
	if t == nil {
		return
	}
	c.tel, c.tels = t, make(map[*routeSpec]*telemetry.Route, len(c.routes))
	c.units = t.Unit(rules.Name, c.module)
	for _, s := range c.routes {
		c.tels[s] = t.Route(telemetry.RouteInfo{Backend: rules.Name, Module: c.module, Route: s.name, Kind: string(s.kind), Reached: s.decision.Reached})
	}
}

// enterBy builds every route's entry, with its instruments (nil without
// telemetry): the kit's steps, then reachCall and the version gate.
func (c *Client) enterBy() {
	c.entries = make(map[*routeSpec]*modules.Entry[reached], len(c.routes))
	for _, s := range c.routes {
		r := route{c: c, spec: s}
		g := modules.GateOf(modules.GateSpec{Rules: rules, Module: c.module, Route: s.name, Decision: s.decision, Suspensions: c.suspensions, Telemetry: c.tels[s]})
		c.entries[s] = modules.NewEntry(g, r.reachCall, r.current)
	}
	c.unitEntry = c.newUnitEntry()
}

// tracedConnect is connect recorded as one call, from its entry until the
// caller releases the pool; the returned context carries the call's span.
func (r route) tracedConnect(ctx context.Context, tenant tenancy.ID) (context.Context, querier, func(), error) {
	ctx, call := r.c.tels[r.spec].Start(ctx, tenant)
	q, release, err := r.reach(ctx, tenant)
	if err != nil {
		return ctx, nil, nil, call.Fail(err)
	}
	return ctx, q, call.Done(release), nil
}

// refuse records a call the route refused before it reached connect
// (tenant_unbound), and returns err.
func (r route) refuse(ctx context.Context, err error) error {
	if r.c.tel == nil {
		return err
	}
	_, call := r.c.tels[r.spec].Start(ctx, tenancy.ID{})
	return call.Fail(err)
}
