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
	return &Gate{Decision: s.Decision, rules: s.Rules, module: s.Module, route: s.Route, susp: s.Suspensions, tel: s.Telemetry, optional: s.TenantOptional}
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
	if e.gate.tel != nil {
		return e.traced(ctx, true)
	}
	// Without telemetry: the steps alone, one frame below the caller.
	id, t, done, err := e.admit(ctx, true)
	return ctx, id, t, done, err
}

// Listen is Enter for a call that lasts until its caller closes it and
// writes nothing an Offboard must wait for (a subscription): checked
// against the suspension like any call, but not held in flight.
func (e *Entry[T]) Listen(ctx context.Context) (context.Context, tenancy.ID, T, func(), error) {
	if e.gate.tel != nil {
		return e.traced(ctx, false)
	}
	id, t, done, err := e.admit(ctx, false)
	return ctx, id, t, done, err
}

// traced is Enter recorded as one call, from its arrival until done.
func (e *Entry[T]) traced(ctx context.Context, hold bool) (context.Context, tenancy.ID, T, func(), error) {
	id, _ := tenancy.FromContext(ctx)
	ctx, call := e.gate.tel.Start(ctx, id)
	id, t, done, err := e.admit(ctx, hold)
	if err != nil {
		return ctx, id, t, nil, call.Fail(err)
	}
	return ctx, id, t, call.Done(done), nil
}

// admit runs the steps after the span, in order.
func (e *Entry[T]) admit(ctx context.Context, hold bool) (tenancy.ID, T, func(), error) {
	var zero T
	id, out, err := e.gate.admit(ctx, hold)
	if err != nil {
		return id, zero, nil, err
	}
	var t T
	var release func()
	if e.reach != nil {
		if t, release, err = e.reach(ctx, id); err != nil {
			out()
			return id, zero, nil, err
		}
	}
	if e.current != nil {
		if err := e.current(ctx, id, t); err != nil {
			if release != nil {
				release()
			}
			out()
			return id, zero, nil, err
		}
	}
	if release == nil {
		return id, t, out, nil
	}
	return id, t, Both(release, out), nil
}

// admit is the gate's own steps: the tenant, then in flight and the
// suspension. Not generic, so a route with nothing to reach pays no
// generic frame (Gate.Call).
func (g *Gate) admit(ctx context.Context, hold bool) (tenancy.ID, func(), error) {
	var id tenancy.ID
	bound := false
	if g.Decision.NeedsTenant || g.optional {
		id, bound = tenancy.FromContext(ctx)
	}
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
	if !hold {
		out()
		out = nop
	}
	return id, out, nil
}

// Call is Entry.Enter for a route that reaches nothing and has no version
// gate of its own (an in-process store): the tenant, in flight and the
// suspension, the span.
func (g *Gate) Call(ctx context.Context) (context.Context, tenancy.ID, func(), error) {
	if g.tel == nil {
		id, done, err := g.admit(ctx, true)
		return ctx, id, done, err
	}
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
	id, t, done, err := e.admit(ctx, true)
	if err != nil {
		return ctx, id, t, Held{}, call.Fail(err)
	}
	return ctx, id, t, Held{call: call, done: done}, nil
}
