package telemetry

import (
	"context"
	"maps"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenantwire/tenantwire/tenancy"
)

// RouteInfo names a route on its spans and series.
type RouteInfo struct {
	Backend, Module, Route, Kind string
	// Reached is the tier the route's wiring reaches.
	Reached tenancy.Tier
	// SpanKind is the kind of the route's spans; unset, client. A
	// producer's are producer spans, a consumer's consumer spans.
	SpanKind trace.SpanKind
}

// Route is one route's instruments with its attributes computed once. A
// nil *Route (the app gave no Telemetry) records nothing and costs a nil
// check.
type Route struct {
	t        *Telemetry
	name     string
	spanOpts []trace.SpanStartOption
	attrs    []attribute.KeyValue // metric labels without the tenant
	set      attribute.Set
	addOpt   []metric.AddOption
	recOpt   []metric.RecordOption
	top      *sketch // nil without Config.Top
}

// Route builds the instruments of one route; nil on a nil *Telemetry, so
// an adapter stores the result and calls it unconditionally.
func (t *Telemetry) Route(info RouteInfo) *Route {
	if t == nil {
		return nil
	}
	r := &Route{t: t, name: info.Backend + " " + info.Route}
	kind := info.SpanKind
	if kind == trace.SpanKindUnspecified {
		kind = trace.SpanKindClient
	}
	r.spanOpts = []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(
		AttrBackend.String(info.Backend), AttrModule.String(info.Module), AttrRoute.String(info.Route),
		AttrKind.String(info.Kind), AttrTier.String(info.Reached.String()))}
	r.attrs = []attribute.KeyValue{
		attribute.String(labelBackend, info.Backend), attribute.String(labelModule, info.Module),
		attribute.String(labelRoute, info.Route), attribute.String(labelKind, info.Kind),
		attribute.String(labelTier, info.Reached.String())}
	r.set = attribute.NewSet(r.attrs...)
	r.addOpt = []metric.AddOption{metric.WithAttributeSet(r.set)}
	r.recOpt = []metric.RecordOption{metric.WithAttributeSet(r.set)}
	if t.top != nil {
		r.top = t.top.add(info)
	}
	return r
}

// Call is one route call in flight. A nil *Call records nothing.
type Call struct {
	r      *Route
	span   trace.Span // nil without a tracer
	start  time.Time
	tenant attribute.KeyValue
	tagged bool       // tenant is a metric label
	id     tenancy.ID // for the heavy-hitters sketch
}

// Start begins a call of the route for tenant (zero: none bound, or an
// unscoped route). The returned context carries the call's span, for a
// caller that passes it on (a producer stamps it into message headers).
// On a nil *Route it returns ctx and a nil *Call, allocating nothing.
func (r *Route) Start(ctx context.Context, tenant tenancy.ID) (context.Context, *Call) {
	if r == nil {
		return ctx, nil
	}
	return r.start(ctx, tenant, nil)
}

// StartLinked is Start for a call that continues work begun elsewhere (a
// relay delivering a row, a consumer handling a record): the span links
// to the span that produced it, whose context carrier holds.
func (r *Route) StartLinked(ctx context.Context, tenant tenancy.ID, carrier map[string]string) (context.Context, *Call) {
	if r == nil {
		return ctx, nil
	}
	var links []trace.SpanStartOption
	if sc := r.t.Extract(carrier); sc.IsValid() {
		links = []trace.SpanStartOption{trace.WithLinks(trace.Link{SpanContext: sc})}
	}
	return r.start(ctx, tenant, links)
}

func (r *Route) start(ctx context.Context, tenant tenancy.ID, extra []trace.SpanStartOption) (context.Context, *Call) {
	c := &Call{r: r, start: time.Now(), id: tenant}
	if r.t.tracer != nil {
		opts := r.spanOpts
		if len(extra) > 0 {
			opts = append(append(make([]trace.SpanStartOption, 0, len(opts)+len(extra)), opts...), extra...)
		}
		ctx, c.span = r.t.tracer.Start(ctx, r.name, opts...)
		// A sampled-out span records nothing: skip the tenant's formatting.
		if c.span.IsRecording() {
			if kv, ok := r.t.SpanTenant(tenant); ok {
				c.span.SetAttributes(kv)
			}
		}
	}
	if r.t.meter != nil {
		c.tenant, c.tagged = r.t.metricTenant(tenant)
	}
	return ctx, c
}

// End ends the call with its outcome: err is recorded on the span with
// its code and counted under it.
func (c *Call) End(err error) {
	if c == nil {
		return
	}
	r := c.r
	if c.span != nil {
		if err != nil {
			recordError(c.span, err)
		}
		c.span.End()
	}
	if r.top != nil {
		r.top.observe(c.id, since(c.start), err != nil, time.Now())
	}
	if r.t.meter == nil {
		return
	}
	ctx := context.Background()
	if !c.tagged {
		r.t.duration.Record(ctx, since(c.start).Seconds(), r.recOpt...)
		if err != nil {
			r.t.errs.Add(ctx, 1, r.addOpt[0], metric.WithAttributes(attribute.String(labelCode, errorCode(err))))
		}
		return
	}
	attrs := append(append(make([]attribute.KeyValue, 0, len(r.attrs)+2), r.attrs...), c.tenant)
	set := attribute.NewSet(attrs...)
	r.t.duration.Record(ctx, since(c.start).Seconds(), metric.WithAttributeSet(set))
	if err != nil {
		r.t.errs.Add(ctx, 1, metric.WithAttributeSet(set), metric.WithAttributes(attribute.String(labelCode, errorCode(err))))
	}
}

// Done returns release extended to end the call when the caller gives its
// client back; release unchanged on a nil *Call. The call's outcome is
// then success: a coded refusal comes from the entry, which ends the call
// with End(err) itself.
func (c *Call) Done(release func()) func() {
	if c == nil {
		return release
	}
	return func() {
		if release != nil {
			release()
		}
		c.End(nil)
	}
}

// Fail ends the call with err when err is not nil, and passes err on:
// `return call.Fail(err)` at each refusal of an entry.
func (c *Call) Fail(err error) error {
	if c != nil && err != nil {
		c.End(err)
	}
	return err
}

// mapCarrier reads and writes a map as a propagation carrier.
type mapCarrier map[string]string

func (m mapCarrier) Get(k string) string { return m[k] }
func (m mapCarrier) Set(k, v string)     { m[k] = v }
func (m mapCarrier) Keys() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Inject returns headers with the trace context of ctx added: a copy
// when it changes anything, so the caller's map is never written; headers
// itself on a nil *Telemetry or when ctx carries no span. A key already
// there is kept: a row relayed on keeps the context of the request that
// wrote it. The BaggageTenant member is the framework's alone: the one
// added is the bound tenant's with Config.Baggage (carriedBaggage), and
// one in a baggage header already there is dropped.
func (t *Telemetry) Inject(ctx context.Context, headers map[string]string) map[string]string {
	if t == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return headers
	}
	fresh := mapCarrier{}
	t.Propagator().Inject(t.carriedBaggage(ctx), fresh)
	out := headers
	copied := false
	own := func() {
		if !copied {
			out = make(map[string]string, len(headers)+len(fresh))
			maps.Copy(out, headers)
			copied = true
		}
	}
	if v, ok := headers[baggageHeader]; ok {
		if kept, left := scrubBaggage(v); kept != v || !left {
			own()
			if left {
				out[baggageHeader] = kept
			} else {
				delete(out, baggageHeader)
			}
		}
	}
	for k, v := range fresh {
		if _, ok := headers[k]; ok {
			continue
		}
		own()
		out[k] = v
	}
	return out
}

// Extract is the span context headers carry (invalid when none).
func (t *Telemetry) Extract(headers map[string]string) trace.SpanContext {
	return trace.SpanContextFromContext(t.Propagator().Extract(context.Background(), mapCarrier(headers)))
}

// Fields are the header names the propagator writes (traceparent,
// tracestate, baggage with the default one).
func (t *Telemetry) Fields() []string { return t.Propagator().Fields() }
