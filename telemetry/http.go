package telemetry

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenantwire/tenantwire/tenancy"
)

// BaggageTenant is the baggage member the boundaries add with
// Config.Baggage.
const BaggageTenant = "tenantwire.tenant"

// HTTP wraps a listener's handler in a server span per request, which
// continues the trace the request's headers carry (W3C trace context) or
// starts one. The span is named after the route pattern that served the
// request. Requests for the paths in untraced (probes and scrapes, which
// arrive every few seconds and say nothing) get no span. next itself on a
// nil *Telemetry or without a tracer.
func (t *Telemetry) HTTP(listener string, next http.Handler, untraced ...string) http.Handler {
	if t == nil || t.tracer == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(untraced, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		ctx := t.Propagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := t.tracer.Start(ctx, "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method),
				attribute.String("url.path", r.URL.Path), attribute.String("tenantwire.listener", listener)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		r = r.WithContext(ctx)
		next.ServeHTTP(sw, r)
		if r.Pattern != "" {
			span.SetName(r.Pattern)
			span.SetAttributes(attribute.String("http.route", r.Pattern))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, strconv.Itoa(sw.status))
		}
	})
}

// statusWriter keeps the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush and Hijack pass through, so a handler that streams or upgrades
// works the same with tracing on.
func (s *statusWriter) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(s.ResponseWriter).Hijack()
}

// Bound is called by a boundary once it has bound tenant to ctx: the
// request's span gets the tenant attribute (under the span policy) and,
// with Config.Baggage, the request's baggage gets it too. ctx itself on a
// nil *Telemetry.
func (t *Telemetry) Bound(ctx context.Context, tenant tenancy.ID) context.Context {
	if t == nil {
		return ctx
	}
	kv, ok := t.SpanTenant(tenant)
	if !ok {
		return ctx
	}
	trace.SpanFromContext(ctx).SetAttributes(kv)
	if !t.cfg.Baggage {
		return ctx
	}
	m, err := baggage.NewMemberRaw(BaggageTenant, kv.Value.AsString())
	if err != nil {
		return ctx
	}
	b, err := baggage.FromContext(ctx).SetMember(m)
	if err != nil {
		return ctx
	}
	return baggage.ContextWithBaggage(ctx, b)
}

// Refused records on ctx's span that the boundary refused the request
// with err (its code included).
func (t *Telemetry) Refused(ctx context.Context, err error) {
	if t == nil || err == nil {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		recordError(span, err)
	}
}
