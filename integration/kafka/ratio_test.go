package kafka_test

import (
	"context"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioTenantTopicProduce is the P7 pair: a synchronous produce to a
// per-tenant topic through the adapter vs a raw kafka-go Writer with the
// same settings, on the real test broker, interleaved, median of rounds.
func TestRatioTenantTopicProduce(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	s := newSpace(t)
	broker := s.broker
	// BatchSize 1 flushes at once: both sides measure the write, not a timer.
	tune := func(w *kafkago.Writer) { w.BatchSize = 1 }
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(broker), kafka.TuneWriter(tune),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders."))})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	ctx := tenancy.WithTenant(context.Background(), tenantA)
	if err := d.Provision.Provision(ctx, tenantA); err != nil {
		t.Fatal(err)
	}
	topic := s.name("orders.") + tenantA.Hex()
	raw := rawWriter(t, broker)
	raw.MaxAttempts, raw.WriteBackoffMin, raw.WriteBackoffMax = 3, 50*time.Millisecond, 500*time.Millisecond
	tune(raw)
	key, value := []byte("order-1"), []byte(`{"total":42}`)

	ours := func(n int) {
		for range n {
			if err := d.Producer.Produce(ctx, kafka.Message{Key: key, Value: value}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The baseline writes what a hand-rolled tenant-aware producer would:
	// the topic and the same two headers.
	base := func(n int) {
		for range n {
			m := kafkago.Message{Topic: topic, Key: key, Value: value, Headers: []kafkago.Header{
				{Key: kafka.HeaderTenant, Value: []byte(tenantA.String())},
				{Key: kafka.HeaderEventID, Value: []byte("0123456789abcdef0123456789abcdef")},
			}}
			if err := raw.WriteMessages(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Many short rounds: a real broker's latency swings with the machine's
	// load, and the median of many rounds rides that out better than the
	// median of a few long ones.
	ratio.Report(t, ratio.Pair{Label: "P7", Name: "kafka-tenant-topic-produce", Ours: ours, Baseline: base, Rounds: 61, Iterations: 100}, 1.05)
}
