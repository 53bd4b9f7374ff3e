package mongo_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/baggage"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestOutboxRowsCarryNoClientTenantBaggage: a MongoDB outbox row written
// under a context carrying a client's tenantwire.tenant baggage member
// (naming tenant B on tenant A's request), and a row whose own baggage
// header names one, store the write's trace context and the other
// members, never that member: with telemetry.Config.Baggage off it is
// absent, with it on it is the bound tenant's.
func TestOutboxRowsCarryNoClientTenantBaggage(t *testing.T) {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	for _, asked := range []bool{false, true} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		var (
			o   *mongo.Outbox
			tel *telemetry.Telemetry
		)
		start(t, mongo.Module("m", append(plain(t), mongo.OutboxRoute("events", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("bag")}))...),
			telemetry.Provide(telemetry.Config{TracerProvider: tp, SpanTenant: telemetry.TenantRaw, Baggage: asked}),
			named("events", &o), fx.Populate(&tel))
		client, err := baggage.Parse(telemetry.BaggageTenant + "=" + b.String() + ",keep=1")
		if err != nil {
			t.Fatal(err)
		}
		ctx, parent := tp.Tracer("test").Start(baggage.ContextWithBaggage(ctxOf(a), client), "request")
		err = o.Write(ctx, outbox.Message{EventID: "e1", Topic: "t"},
			outbox.Message{EventID: "e2", Topic: "t", Headers: map[string]string{"baggage": telemetry.BaggageTenant + "=" + b.String() + ",mine=2"}})
		parent.End()
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := o.Pending(ctxOf(a), 0)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("pending: %v %v", msgs, err)
		}
		wantTenant := map[string]string{"e1": "", "e2": ""}
		if asked {
			wantTenant["e1"] = a.String()
		}
		wantKept := map[string][2]string{"e1": {"keep", "1"}, "e2": {"mine", "2"}}
		for _, m := range msgs {
			got, err := baggage.Parse(m.Headers["baggage"])
			if err != nil {
				t.Errorf("baggage %v, row %s: %q: %v", asked, m.EventID, m.Headers["baggage"], err)
				continue
			}
			if v := got.Member(telemetry.BaggageTenant).Value(); v != wantTenant[m.EventID] {
				t.Errorf("baggage %v, row %s: tenantwire.tenant %q, want %q (%q)", asked, m.EventID, v, wantTenant[m.EventID], m.Headers["baggage"])
			}
			if k := wantKept[m.EventID]; got.Member(k[0]).Value() != k[1] {
				t.Errorf("baggage %v, row %s: lost the member %s (%q)", asked, m.EventID, k[0], m.Headers["baggage"])
			}
			if sc := tel.Extract(m.Headers); sc.TraceID() != parent.SpanContext().TraceID() || sc.SpanID() == parent.SpanContext().SpanID() {
				t.Errorf("baggage %v, row %s: trace context %v is not the write's own span", asked, m.EventID, m.Headers)
			}
		}
	}
}
