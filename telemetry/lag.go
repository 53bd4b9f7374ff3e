package telemetry

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Lag is one consumer's lag gauge: each of its readers (one, or one per
// tenant of a sharded consumer) reports how many records it is behind,
// read when the metrics are collected. A nil *Lag tracks nothing.
type Lag struct {
	t     *Telemetry
	attrs []attribute.KeyValue
	mu    sync.Mutex
	reads map[*lagRead]struct{}
}

type lagRead struct {
	tenant tenancy.ID
	read   func() int64
}

// Lag builds a consumer's lag gauge; nil without a meter.
func (t *Telemetry) Lag(info RouteInfo) *Lag {
	if t == nil || t.meter == nil {
		return nil
	}
	l := &Lag{t: t, reads: map[*lagRead]struct{}{}, attrs: []attribute.KeyValue{
		attribute.String(labelBackend, info.Backend), attribute.String(labelModule, info.Module),
		attribute.String(labelRoute, info.Route)}}
	t.lags.Store(l, struct{}{})
	return l
}

// Track adds a reader whose lag read returns, for tenant (zero: the
// consumer's one reader); untrack removes it when the reader stops.
func (l *Lag) Track(tenant tenancy.ID, read func() int64) (untrack func()) {
	if l == nil {
		return func() {}
	}
	r := &lagRead{tenant: tenant, read: read}
	l.mu.Lock()
	l.reads[r] = struct{}{}
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.reads, r)
		l.mu.Unlock()
	}
}

// observeLag registers the consumer lag gauge, read from every Lag.
func (t *Telemetry) observeLag() error {
	g, err := t.meter.Int64ObservableGauge("tenantwire.consumer.lag",
		metric.WithDescription("Records a consumer's readers are behind the end of their partitions, as the client last saw it."),
		metric.WithUnit("{record}"))
	if err != nil {
		return err
	}
	_, err = t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		t.lags.Range(func(k, _ any) bool {
			l := k.(*Lag)
			// Readers that share a label set (tenants outside the bounded
			// set, all "other") are summed: a gauge keeps one value per set.
			sums := map[attribute.Distinct]struct {
				set attribute.Set
				v   int64
			}{}
			l.mu.Lock()
			for r := range l.reads {
				attrs := l.attrs
				if kv, ok := t.metricTenant(r.tenant); ok {
					attrs = append(append([]attribute.KeyValue(nil), l.attrs...), kv)
				}
				set := attribute.NewSet(attrs...)
				s := sums[set.Equivalent()]
				s.set, s.v = set, s.v+max(r.read(), 0)
				sums[set.Equivalent()] = s
			}
			l.mu.Unlock()
			for _, s := range sums {
				o.ObserveInt64(g, s.v, metric.WithAttributeSet(s.set))
			}
			return true
		})
		return nil
	}, g)
	return err
}
