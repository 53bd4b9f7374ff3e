package modules

import (
	"context"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Reach is how a backend reaches what one call of a route runs on (its
// client, pool, collection, key prefix: T) for tenant, zero on a route
// that needs none. release gives back what was taken (a routed client to
// its pool); nil when there is nothing to give back, which keeps the
// call's end free of a closure.
type Reach[T any] func(ctx context.Context, tenant tenancy.ID) (t T, release func(), err error)

// Current is a backend's version gate for the call: it refuses
// (tenant_migration_behind, tenant_not_provisioned) when what the call
// reached records a version of the module below the one its routes need,
// typically by migrate.Gate.CheckTenant on the target t names.
type Current[T any] func(ctx context.Context, tenant tenancy.ID, t T) error

// GateSpec is a Gate built from a decision a backend took itself (its
// rules on its own route spec): NewGate is this for a kit backend.
type GateSpec struct {
	Rules         floors.Backend
	Module, Route string
	Decision      floors.Decision
	Suspensions   *Suspensions
	// Telemetry is the route's instruments; nil records nothing.
	Telemetry *telemetry.Route
	// TenantOptional: on a route that needs no tenant, a call with one
	// bound still runs for it (checked and held in flight like a scoped
	// call); one with none runs for none. A producer's static topic
	// stamps the bound tenant on its records.
	TenantOptional bool
}

// GateOf builds the gate s describes.
func GateOf(s GateSpec) *Gate {
	return &Gate{Decision: s.Decision, rules: s.Rules, module: s.Module, route: s.Route, susp: s.Suspensions, tel: s.Telemetry, optional: s.TenantOptional,
		share: s.Suspensions.shareOf(s.Module)}
}

// Entry is a route's Gate with the backend's two steps: how a call
// reaches its client (Reach, optional) and the version gate (Current,
// optional). Every call of a route goes through its Entry, in this order:
// the tenant bound and checked (tenant_unbound), the call held in flight
// and checked against the tenant's suspension (Suspensions.Enter:
// tenant_suspended), the reach, the version gate; its end releases in
// reverse. The span opens when the call arrives, so a refusal is on it.
// Without telemetry, and with a reach that releases nothing, entering
// allocates nothing.
type Entry[T any] struct {
	gate    Gate
	reach   Reach[T]
	current Current[T]
	// unheld: Listen's copy, which checks a call but holds it not in flight.
	unheld bool
}

// NewEntry is g's entry with the backend's steps (either may be nil).
func NewEntry[T any](g *Gate, reach Reach[T], current Current[T]) *Entry[T] {
	return &Entry[T]{gate: *g, reach: reach, current: current}
}

// Decision is the rules' decision for the entry's route.
func (e *Entry[T]) Decision() floors.Decision { return e.gate.Decision }

// Enter admits one call: the context carrying its span (ctx without
// telemetry), the tenant (zero on a route that needs none), what the call
// reached and done, which the caller runs exactly once when nothing more
// of the call can be written. A refusal has already ended the call: done
// is then nil.
func (e *Entry[T]) Enter(ctx context.Context) (context.Context, tenancy.ID, T, func(), error) {
	// The steps written out in one frame, the gate's too (not Gate.admit):
	// a call without telemetry pays one frame of the kit's between its
	// route and Suspensions.Enter and its reach, as a route written by
	// hand would. Listen and OpenLinked run it on a copy of e.
	var zero, t T
	g := &e.gate
	var call *telemetry.Call
	if g.tel != nil {
		id, _ := tenancy.FromContext(ctx)
		ctx, call = g.tel.Start(ctx, id)
	}
	var id tenancy.ID
	out := nop
	if g.Decision.NeedsTenant || g.optional {
		var bound bool
		var err error
		id, bound = tenancy.FromContext(ctx)
		if bound && !e.unheld {
			if g.share == nil {
				out, err = g.susp.Enter(id, g.rules.Name, g.module, g.route)
			} else {
				out, err = g.shared(ctx, id)
			}
		} else {
			id, out, err = g.slow(id, bound)
		}
		if err != nil {
			return ctx, id, zero, nil, call.Fail(err)
		}
	}
	var release func()
	if e.reach != nil {
		var err error
		if t, release, err = e.reach(ctx, id); err != nil {
			out()
			return ctx, id, zero, nil, call.Fail(err)
		}
	}
	if e.current != nil {
		if err := e.current(ctx, id, t); err != nil {
			if release != nil {
				release()
			}
			out()
			return ctx, id, zero, nil, call.Fail(err)
		}
	}
	done := out
	if release != nil {
		done = Both(release, out)
	}
	if call != nil {
		done = call.Done(done)
	}
	return ctx, id, t, done, nil
}

// Listen is Enter for a call that lasts until its caller closes it and
// writes nothing an Offboard must wait for (a subscription): checked
// against the suspension like any call, but not held in flight.
func (e *Entry[T]) Listen(ctx context.Context) (context.Context, tenancy.ID, T, func(), error) {
	l := *e
	l.unheld = true
	return l.Enter(ctx)
}

// admit is the gate's own steps: the tenant, then in flight and the
// suspension (Gate.Enter and a traced Call; an untraced Call and
// Entry.Enter write them out, one frame fewer).
func (g *Gate) admit(ctx context.Context, hold bool) (tenancy.ID, func(), error) {
	if !g.Decision.NeedsTenant && !g.optional {
		return tenancy.ID{}, nop, nil
	}
	id, bound := tenancy.FromContext(ctx)
	if !bound || !hold {
		return g.slow(id, bound)
	}
	if g.share != nil {
		out, err := g.shared(ctx, id)
		return id, out, err
	}
	out, err := g.susp.Enter(id, g.rules.Name, g.module, g.route)
	return id, out, err
}

// shared enters the call in flight, checks the suspension, then holds it
// within its tenant's share (so a suspended tenant waits for nothing); on
// a refusal the call leaves the calls in flight. Its end is the count's
// own for the call's epoch: nothing is allocated.
func (g *Gate) shared(ctx context.Context, id tenancy.ID) (func(), error) {
	i, e, err := g.susp.enterAt(id, g.rules.Name, g.module, g.route)
	if err != nil {
		return nil, err
	}
	c, err := g.share.take(ctx, id, g.rules.Name, g.route)
	if err != nil {
		g.susp.flight.ends[i][e]()
		return nil, err
	}
	return c.both[e], nil
}

// slow is admit's rarer cases, out of line: no tenant bound (refused on
// a route that needs one), or a call that is checked but not held.
func (g *Gate) slow(id tenancy.ID, bound bool) (tenancy.ID, func(), error) {
	if !bound {
		if g.Decision.NeedsTenant {
			return id, nil, g.rules.Unbound(g.module, g.route)
		}
		return id, nop, nil
	}
	out, err := g.susp.Enter(id, g.rules.Name, g.module, g.route)
	if err != nil {
		return id, nil, err
	}
	out()
	return id, nop, nil
}

// Call is Entry.Enter for a route that reaches nothing and has no version
// gate of its own (an in-process store): the tenant, in flight and the
// suspension, the span.
func (g *Gate) Call(ctx context.Context) (context.Context, tenancy.ID, func(), error) {
	if g.tel != nil {
		return g.traced(ctx)
	}
	// admit's steps written out: one frame below the caller, as a route
	// written by hand would pay.
	if !g.Decision.NeedsTenant && !g.optional {
		return ctx, tenancy.ID{}, nop, nil
	}
	id, bound := tenancy.FromContext(ctx)
	if !bound {
		id, done, err := g.slow(id, false)
		return ctx, id, done, err
	}
	if g.share != nil {
		done, err := g.shared(ctx, id)
		return ctx, id, done, err
	}
	done, err := g.susp.Enter(id, g.rules.Name, g.module, g.route)
	return ctx, id, done, err
}

// traced is Call recorded as one call, from its arrival until done.
func (g *Gate) traced(ctx context.Context) (context.Context, tenancy.ID, func(), error) {
	id, _ := tenancy.FromContext(ctx)
	ctx, call := g.tel.Start(ctx, id)
	id, done, err := g.admit(ctx, true)
	if err != nil {
		return ctx, id, nil, call.Fail(err)
	}
	return ctx, id, call.Done(done), nil
}

// Held is a call admitted by Entry.Open: End ends it with its outcome.
type Held struct {
	call *telemetry.Call
	done func()
}

// End ends the call: what it reached is released, it leaves the calls in
// flight, and its span ends with err as its outcome. Run it exactly once.
func (h Held) End(err error) {
	if h.done != nil {
		h.done()
	}
	h.call.End(err)
}

// Open is Enter for a call whose span records its outcome (a transaction
// that can fail after its entry): the caller ends it with Held.End(err).
func (e *Entry[T]) Open(ctx context.Context) (context.Context, tenancy.ID, T, Held, error) {
	return e.OpenLinked(ctx, nil)
}

// OpenLinked is Open for a call that continues work begun elsewhere (a
// relay delivering a row): its span links to the span whose context
// carrier holds.
func (e *Entry[T]) OpenLinked(ctx context.Context, carrier map[string]string) (context.Context, tenancy.ID, T, Held, error) {
	var call *telemetry.Call
	if e.gate.tel != nil {
		id, _ := tenancy.FromContext(ctx)
		if carrier != nil {
			ctx, call = e.gate.tel.StartLinked(ctx, id, carrier)
		} else {
			ctx, call = e.gate.tel.Start(ctx, id)
		}
	}
	// The span is open already: Enter on a copy without the instruments.
	u := *e
	u.gate.tel = nil
	ctx, id, t, done, err := u.Enter(ctx)
	if err != nil {
		return ctx, id, t, Held{}, call.Fail(err)
	}
	return ctx, id, t, Held{call: call, done: done}, nil
}
