package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenantwire/tenantwire/tenancy"
)

// UnitSpan is the name of a unit of work's span: one transaction that
// several route calls join (postgres.Client.InTx). The route calls inside
// it are its children. A fixed name, not "<backend> <route>": a unit is no
// route, and a route may be called "unit".
const UnitSpan = "tenantwire.unit"

// AttrUnitOutcome is how a unit of work ended: OutcomeCommit,
// OutcomeRollback or OutcomeError.
const AttrUnitOutcome = attribute.Key("tenantwire.unit.outcome")

// Outcomes of a unit of work.
const (
	// OutcomeCommit: the transaction committed.
	OutcomeCommit = "commit"
	// OutcomeRollback: the transaction rolled back (its function failed or
	// panicked, or a transaction inside it rolled back).
	OutcomeRollback = "rollback"
	// OutcomeError: no transaction ran to its end: the unit was refused
	// at its entry, or its BEGIN or COMMIT failed.
	OutcomeError = "error"
)

// Unit is one module's unit-of-work instruments. A nil *Unit (no
// Telemetry, or one without a tracer) records nothing and costs a nil
// check; units are spans only, not metric series, since they have no
// route to label them with.
type Unit struct {
	t    *Telemetry
	opts []trace.SpanStartOption
}

// Unit builds the unit-of-work instruments of one module; nil on a nil
// *Telemetry or one without a TracerProvider.
func (t *Telemetry) Unit(backend, module string) *Unit {
	if t == nil || t.tracer == nil {
		return nil
	}
	return &Unit{t: t, opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(AttrBackend.String(backend), AttrModule.String(module))}}
}

// UnitCall is one unit of work in flight; its zero value (from a nil
// *Unit) records nothing.
type UnitCall struct{ span trace.Span }

// Start begins a unit of work for tenant (zero: none bound). The returned
// context carries its span, so the calls made with it are its children.
// On a nil *Unit it returns ctx and a zero UnitCall, allocating nothing.
func (u *Unit) Start(ctx context.Context, tenant tenancy.ID) (context.Context, UnitCall) {
	if u == nil {
		return ctx, UnitCall{}
	}
	ctx, span := u.t.tracer.Start(ctx, UnitSpan, u.opts...)
	if span.IsRecording() {
		if kv, ok := u.t.SpanTenant(tenant); ok {
			span.SetAttributes(kv)
		}
	}
	return ctx, UnitCall{span}
}

// End ends the unit with its outcome; err, when not nil, is recorded with
// its code.
func (c UnitCall) End(outcome string, err error) {
	if c.span == nil {
		return
	}
	c.span.SetAttributes(AttrUnitOutcome.String(outcome))
	if err != nil {
		recordError(c.span, err)
	}
	c.span.End()
}
