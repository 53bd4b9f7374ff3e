package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

type behindRead struct {
	set   attribute.Set
	count func() int
}

// ObserveBehind adds a module's count of tenants behind its
// RequiredVersion (migrate.Gate.Behind) to the migrations gauge, read at
// collection. Without a meter it does nothing.
func (t *Telemetry) ObserveBehind(module, backend string, count func() int) {
	if t == nil || t.meter == nil || count == nil {
		return
	}
	t.behind.Store(&behindRead{set: attribute.NewSet(attribute.String(labelBackend, backend), attribute.String(labelModule, module)), count: count}, struct{}{})
}

// observeBehind registers the tenants-behind gauge.
func (t *Telemetry) observeBehind() error {
	g, err := t.meter.Int64ObservableGauge("tenantwire.migration.tenants_behind",
		metric.WithDescription("Tenants whose calls this process refused as behind the module's RequiredVersion and has not found current since."),
		metric.WithUnit("{tenant}"))
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	_, err = t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		t.behind.Range(func(k, _ any) bool {
			b := k.(*behindRead)
			o.ObserveInt64(g, int64(b.count()), metric.WithAttributeSet(b.set))
			return true
		})
		return nil
	}, g)
	return err
}
