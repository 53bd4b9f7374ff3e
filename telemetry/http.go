package telemetry

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// HTTP wraps a listener's handler in a server span per request, which
// continues the trace the request's headers carry (W3C trace context) or
// starts one. The span is named after the route pattern that served the
// request (http.route); the request's path is on it (url.path) only under
// the TenantRaw span policy, since a path can hold a tenant's id
// (/tenants/{id}) and the omit and hash policies promise none is
// recorded. Requests for the paths in untraced (probes and scrapes, which
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
		// The caller's own BaggageTenant member goes now, before the app's
		// middleware (Config.Wrap) or any handler sees the context.
		ctx := dropTenantBaggage(t.Propagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		attrs := []attribute.KeyValue{attribute.String("http.request.method", r.Method), attribute.String("tenantwire.listener", listener)}
		if t.cfg.SpanTenant.mode == raw {
			attrs = append(attrs, attribute.String("url.path", r.URL.Path))
		}
		ctx, span := t.tracer.Start(ctx, "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
		note := &routeNote{}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		r = r.WithContext(context.WithValue(ctx, routeNoteKey{}, note))
		next.ServeHTTP(sw, r)
		if note.pattern == "" {
			note.pattern = r.Pattern
		}
		if note.pattern != "" {
			span.SetName(note.pattern)
			span.SetAttributes(attribute.String("http.route", note.pattern))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, strconv.Itoa(sw.status))
		}
	})
}

// routeNote is where the routed handler leaves the pattern that matched:
// ServeMux sets Request.Pattern on the request it hands on, which is a
// copy whenever a middleware in between called WithContext.
type routeNote struct{ pattern string }

type routeNoteKey struct{}

// NoteRoute records r.Pattern, the ServeMux pattern that routed r, as the
// http.route of the span HTTP started for r. tenanthttp calls it in front
// of every route it serves.
func NoteRoute(r *http.Request) {
	if n, ok := r.Context().Value(routeNoteKey{}).(*routeNote); ok && r.Pattern != "" {
		n.pattern = r.Pattern
	}
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

// Refused records on ctx's span that the boundary refused the request
// with err (its code included).
func (t *Telemetry) Refused(ctx context.Context, err error) {
	if t == nil {
		return
	}
	RecordRefused(ctx, err)
}

// RecordRefused records on ctx's span, when it is recording, that the
// request was refused with err (its code included); tenanthttp.WriteError
// calls it for the errors a handler answers.
func RecordRefused(ctx context.Context, err error) {
	if err == nil {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		recordError(span, err)
	}
}
