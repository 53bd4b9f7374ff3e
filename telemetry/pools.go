package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/tenantwire/tenantwire/routing"
)

// observePools registers the routed client pools' gauges: open clients,
// slots in use against the bound (the connection budget's client side),
// and clients retired. They are read at collection, from every open
// routing.Pools of the process; nothing is counted on a call's path.
func (t *Telemetry) observePools() error {
	var errs [4]error
	var clients, used, limit metric.Int64ObservableGauge
	var evictions metric.Int64ObservableCounter
	clients, errs[0] = t.meter.Int64ObservableGauge("tenantwire.routing.clients",
		metric.WithDescription("Open per-tenant clients of a routed module."), metric.WithUnit("{client}"))
	used, errs[1] = t.meter.Int64ObservableGauge("tenantwire.routing.slots.used",
		metric.WithDescription("Client slots in use (opening, open or closing) of a routed module."), metric.WithUnit("{client}"))
	limit, errs[2] = t.meter.Int64ObservableGauge("tenantwire.routing.slots.limit",
		metric.WithDescription("The routed module's bound on client slots (MaxClients)."), metric.WithUnit("{client}"))
	evictions, errs[3] = t.meter.Int64ObservableCounter("tenantwire.routing.evictions",
		metric.WithDescription("Per-tenant clients retired: least recently used, evicted, rotated or closed."), metric.WithUnit("{client}"))
	if err := errors.Join(errs[:]...); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	_, err := t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, p := range routing.Observe() {
			at := metric.WithAttributes(attribute.String(labelBackend, p.Backend), attribute.String(labelModule, p.Module))
			o.ObserveInt64(clients, int64(p.Pools), at)
			o.ObserveInt64(used, int64(p.Clients), at)
			o.ObserveInt64(limit, int64(p.MaxClients), at)
			o.ObserveInt64(evictions, p.Retired, at)
		}
		return nil
	}, clients, used, limit, evictions)
	return err
}
