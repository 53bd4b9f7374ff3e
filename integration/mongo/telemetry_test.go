package mongo_test

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
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
