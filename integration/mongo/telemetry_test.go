package mongo_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRouteCallIsASpan: with a TracerProvider given, a MongoDB route call
// is a span carrying the route's module, kind, tier and tenant, and a call
// with no tenant bound one carrying tenant_unbound.
func TestRouteCallIsASpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var docs *mongo.Documents[item]
	start(t, mongo.Module("m", append(plain(t), mongo.Document[item]("items", tiers[0].cfg("items")))...),
		telemetry.Provide(telemetry.Config{TracerProvider: tp, SpanTenant: telemetry.TenantRaw}),
		fx.Populate(&docs))
	if _, err := docs.Create(ctxOf(tenancytest.TenantA), "p1", item{"a", 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := docs.Get(context.Background(), "p1"); !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Fatalf("unbound Get: %v", err)
	}
	var ok, refused map[string]string
	for _, s := range rec.Ended() {
		a := map[string]string{}
		for _, kv := range s.Attributes() {
			a[string(kv.Key)] = kv.Value.String()
		}
		if s.Name() != "mongodb items" {
			continue
		}
		if a[string(telemetry.AttrErrorCode)] == "" {
			ok = a
		} else {
			refused = a
		}
	}
	if ok["tenantwire.module"] != "m" || ok["tenantwire.tier"] != "tagged" || ok["tenantwire.route.kind"] != "document" ||
		ok["tenantwire.tenant"] != tenancytest.TenantA.String() {
		t.Errorf("route span: %v", ok)
	}
	if refused[string(telemetry.AttrErrorCode)] != "tenant_unbound" {
		t.Errorf("refused span: %v", refused)
	}
}

// TestOutboxWriteIsASpanItsRowsName: with a TracerProvider given, a
// MongoDB outbox Write is a route span (module, kind, tier, tenant), a
// child of the caller's span, and every row it writes carries that span's
// own trace context (W3C traceparent), which is what the relay's delivery
// links to; an unbound Write is a span recording tenant_unbound.
func TestOutboxWriteIsASpanItsRowsName(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var (
		o   *mongo.Outbox
		tel *telemetry.Telemetry
	)
	start(t, mongo.Module("m", append(plain(t), mongo.OutboxRoute("events", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("ev")}))...),
		telemetry.Provide(telemetry.Config{TracerProvider: tp, SpanTenant: telemetry.TenantRaw}),
		named("events", &o), fx.Populate(&tel))
	ctx, parent := tp.Tracer("test").Start(ctxOf(tenancytest.TenantA), "request")
	err := o.Write(ctx, outbox.Message{EventID: "e1", Topic: "t"}, outbox.Message{EventID: "e2", Topic: "t", Headers: map[string]string{"k": "v"}})
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Write(context.Background(), outbox.Message{EventID: "e3", Topic: "t"}); !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Fatalf("unbound Write: %v", err)
	}
	var write, refused sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() != "mongodb events" {
			continue
		}
		if spanAttrs(s)[string(telemetry.AttrErrorCode)] != "" {
			refused = s
		} else {
			write = s
		}
	}
	if write == nil || refused == nil {
		t.Fatalf("write span %v, refused span %v", write, refused)
	}
	a := spanAttrs(write)
	if a["tenantwire.module"] != "m" || a["tenantwire.route.kind"] != "outbox" || a["tenantwire.tier"] != "tagged" ||
		a["tenantwire.tenant"] != tenancytest.TenantA.String() {
		t.Errorf("write span attributes: %v", a)
	}
	if write.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("the write span is not a child of the caller's span")
	}
	if code := spanAttrs(refused)[string(telemetry.AttrErrorCode)]; code != string(tenancy.CodeTenantUnbound) {
		t.Errorf("refused write: code %q", code)
	}
	msgs, err := o.Pending(ctxOf(tenancytest.TenantA), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("pending: %d rows, want 2", len(msgs))
	}
	for _, m := range msgs {
		if m.Headers["traceparent"] == "" {
			t.Errorf("row %s: no traceparent in %v", m.EventID, m.Headers)
			continue
		}
		if sc := tel.Extract(m.Headers); sc.TraceID() != write.SpanContext().TraceID() || sc.SpanID() != write.SpanContext().SpanID() {
			t.Errorf("row %s: headers name span %s/%s, want the write's %s/%s", m.EventID,
				sc.TraceID(), sc.SpanID(), write.SpanContext().TraceID(), write.SpanContext().SpanID())
		}
	}
	if i := slices.IndexFunc(msgs, func(m outbox.Message) bool { return m.EventID == "e2" }); i < 0 || msgs[i].Headers["k"] != "v" {
		t.Errorf("row e2 lost its own header: %v", msgs)
	}
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	a := map[string]string{}
	for _, kv := range s.Attributes() {
		a[string(kv.Key)] = kv.Value.String()
	}
	return a
}
