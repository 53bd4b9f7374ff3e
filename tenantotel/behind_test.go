package tenantotel_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestTenantsBehindIsAGauge: a tenant refused as behind its module's
// RequiredVersion counts in tenantwire.migration.tenants_behind until a
// migration run marks it current.
func TestTenantsBehindIsAGauge(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(telemetry.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	gate := migrate.NewGate("orders", "postgres", 3)
	tel.ObserveBehind("orders", "postgres", gate.Behind)
	ctx := context.Background()
	at := func(v int64) func(context.Context) (int64, error) {
		return func(context.Context) (int64, error) { return v, nil }
	}
	behind := func() int64 {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "tenantwire.migration.tenants_behind" {
					continue
				}
				for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
					if v, _ := p.Attributes.Value("module"); v.AsString() == "orders" {
						return p.Value
					}
				}
			}
		}
		t.Fatal("no tenants_behind series for module orders")
		return 0
	}
	if got := behind(); got != 0 {
		t.Fatalf("behind %d before any call, want 0", got)
	}
	a, b := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a"), tenancy.MustParseID("0b0b0b0b-0000-4000-8000-00000000000b")
	if err := gate.Check(ctx, a, "s_a", "r", at(2)); err == nil {
		t.Fatal("a tenant at 2 of 3 was let through")
	}
	_ = gate.Check(ctx, b, "s_b", "r", at(1))
	_ = gate.Check(ctx, b, "s_b", "r", at(1))
	if got := behind(); got != 2 {
		t.Fatalf("behind %d, want 2", got)
	}
	gate.Mark(a, "s_a", 3)
	if got := behind(); got != 1 {
		t.Fatalf("behind %d after migrating one, want 1", got)
	}
	gate.Forget(b)
	if got := behind(); got != 0 {
		t.Fatalf("behind %d after tearing the other down, want 0", got)
	}
}
