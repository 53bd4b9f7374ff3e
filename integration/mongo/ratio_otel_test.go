package mongo_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancytest"
	"github.com/tenantwire/tenantwire/tenantotel"
)

// discard is the no-op exporter: the SDK does all its work (spans built,
// batched, handed over) and the spans go nowhere.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// sdkOn is the telemetry of a P11 "on" side, as in tenantotel's pairs: the
// SDK's tracer sampling every call with tenantotel's Batcher in front of
// the no-op exporter, the SDK's meter with a reader (aggregating every
// measurement, read only when scraped), the tenant on spans.
func sdkOn(t *testing.T) fx.Option {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tenantotel.NewBatcher(discard{}, tenantotel.BatcherConfig{})),
		sdktrace.WithSampler(sdktrace.AlwaysSample()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	return telemetry.Provide(telemetry.Config{TracerProvider: tp, MeterProvider: mp, SpanTenant: telemetry.TenantRaw})
}

// TestRatioP11On: P11 for MongoDB, a find by id with tracing and metrics on
// (sdkOn) against the same find in an app with no provider, on a
// collection per tenant and on a tagged shared collection; target 1.10.
// Both apps use one client and one database, so both sides read the same
// record over the same connection pool. The no-provider pair is
// TestRatioP11Off in adapters/mongo.
func TestRatioP11On(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	ctx := ctxOf(tenancytest.TenantA)
	for _, c := range []struct {
		name string
		cfg  mongo.RouteConfig
	}{
		{"mongo-per-tenant-collection-otel-on", mongo.RouteConfig{Collection: naming.PerTenant("items")}},
		{"mongo-tagged-otel-on", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, db := client(t, uriA), freshName()
			var on, off *mongo.Documents[item]
			start(t, mongo.Module("m", mongo.Use(cl), mongo.Database(db), mongo.Document[item]("items", c.cfg)), sdkOn(t), fx.Populate(&on))
			start(t, mongo.Module("m", mongo.Use(cl), mongo.Database(db), mongo.Document[item]("items", c.cfg)), fx.Populate(&off))
			if _, err := off.Create(ctx, "k", item{Name: "bench", N: 7}); err != nil {
				t.Fatal(err)
			}
			get := func(d *mongo.Documents[item]) func(int) {
				return func(n int) {
					for range n {
						if r, err := d.Get(ctx, "k"); err != nil || r.Value.N != 7 {
							t.Fatal(r, err)
						}
					}
				}
			}
			r := ratio.Report(t, ratio.Pair{Label: "P11", Name: c.name, Ours: get(on), Baseline: get(off), Rounds: 31, Iterations: 300}, 1.10)
			// The find's absolute cost says what a span is weighed against.
			t.Logf("a find: %.1f µs traced, %.1f µs without a provider", r.OursNs/1e3, r.BaseNs/1e3)
		})
	}
}
