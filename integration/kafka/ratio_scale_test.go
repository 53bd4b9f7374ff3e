package kafka_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/tenancy"
)

const scaleTopics = 1000

// scaleShards is the sharded consumer's tenant count in its start-up pair:
// not 1,000. With 1,000 group readers (one consumer group per tenant, as
// the adapter and the hand-written baseline both do) on one in-process
// kfake broker of this 2-core machine, neither side had handled every
// tenant's first record after two minutes: reads timed out and dials were
// reset.
const scaleShards = 100

// scaleKafka is an in-process kfake cluster with scaleTopics per-tenant
// topics provisioned, each holding one record.
type scaleKafka struct {
	broker, prefix string
	ids            []tenancy.ID
	ctxs           []context.Context
	producer       *kafka.Producer
}

func newScaleKafka(t *testing.T) *scaleKafka {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := &scaleKafka{broker: c.ListenAddrs()[0], prefix: "orders."}
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker), kafka.TuneWriter(func(w *kafkago.Writer) { w.BatchSize = 1 }),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{TopicPrefix: s.prefix})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	s.producer = d.Producer
	began := time.Now()
	for i := range scaleTopics {
		id := tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1))
		s.ids = append(s.ids, id)
		s.ctxs = append(s.ctxs, tenancy.WithTenant(context.Background(), id))
		if err := d.Provision.Provision(s.ctxs[i], id); err != nil {
			t.Fatal(err)
		}
		if err := d.Producer.Produce(s.ctxs[i], kafka.Message{Value: []byte("first")}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("provisioned %d tenant topics on kfake, one record each, in %v", scaleTopics, time.Since(began).Round(time.Millisecond))
	return s
}

// TestRatioScaleKafka: a synchronous produce cycling over 1,000 per-tenant
// topics vs a raw kafka-go Writer naming the topic per message; and a
// sharded consumer's start-up with its assigned tenants (start until
// every tenant's first record is handled, then stop) vs hand-written group
// readers doing the same, over scaleShards tenants. Both on kfake, in
// process.
func TestRatioScaleKafka(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	s := newScaleKafka(t)
	raw := rawWriter(t, s.broker)
	raw.BatchSize = 1
	key, value := []byte("order-1"), []byte(`{"total":42}`)
	ours := func(n int) {
		for i := range n {
			if err := s.producer.Produce(s.ctxs[i%scaleTopics], kafka.Message{Key: key, Value: value}); err != nil {
				t.Fatal(err)
			}
		}
	}
	base := func(n int) {
		for i := range n {
			id := s.ids[i%scaleTopics]
			m := kafkago.Message{Topic: s.prefix + id.Hex(), Key: key, Value: value, Headers: []kafkago.Header{
				{Key: kafka.HeaderTenant, Value: []byte(id.String())},
				{Key: kafka.HeaderEventID, Value: []byte("0123456789abcdef0123456789abcdef")},
			}}
			if err := raw.WriteMessages(s.ctxs[i%scaleTopics], m); err != nil {
				t.Fatal(err)
			}
		}
	}
	label := "S" + strconv.Itoa(scaleTopics)
	ratio.ReportScale(t, ratio.Pair{Label: label, Name: "kafka-tenant-topic-produce", Ours: ours, Baseline: base, Rounds: 15, Iterations: 200}, 1.05)

	var round atomic.Int64
	group := func() string { return fmt.Sprintf("g%d", round.Add(1)) }
	oursStart := func(n int) {
		for range n {
			s.startSharded(t, group())
		}
	}
	handStart := func(n int) {
		for range n {
			s.startHand(t, group())
		}
	}
	t.Logf("sharded consumer start-up over %d tenants, not %d: one kfake broker here does not serve %d group readers in time", scaleShards, scaleTopics, scaleTopics)
	ratio.ReportScale(t, ratio.Pair{Label: "S" + strconv.Itoa(scaleShards), Name: "kafka-sharded-consumer-start", Ours: oursStart, Baseline: handStart, Rounds: 5, Iterations: 1}, 1.05)
}

// startSharded starts a sharded consumer over every tenant, waits until
// each tenant's first record was handled, and stops it.
func (s *scaleKafka) startSharded(t *testing.T, group string) {
	var handled atomic.Int64
	done := make(chan struct{})
	app := fx.New(fx.NopLogger,
		kafka.Module("consume", kafka.Brokers(s.broker),
			kafka.Consumer("orders", kafka.ConsumerConfig{Group: group,
				Tenants: tenants(s.ids[:scaleShards]...),
				Handle: func(context.Context, kafkago.Message) error {
					if handled.Add(1) == scaleShards {
						close(done)
					}
					return nil
				}, TopicPrefix: s.prefix})))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("sharded consumer: %d of %d first records handled", handled.Load(), scaleShards)
	}
	if err := app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// startHand is the same by hand: one group reader per tenant topic, its
// group named per tenant, fetching and committing until every tenant's
// first record was handled, then closed.
func (s *scaleKafka) startHand(t *testing.T, group string) {
	var handled atomic.Int64
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, id := range s.ids[:scaleShards] {
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{s.broker}, GroupID: group + "." + id.Hex(), Topic: s.prefix + id.Hex(),
			MaxWait: 250 * time.Millisecond, StartOffset: kafkago.FirstOffset, HeartbeatInterval: time.Second,
			SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second, JoinGroupBackoff: time.Second})
		wg.Go(func() {
			defer r.Close()
			for {
				m, err := r.FetchMessage(tenancy.WithTenant(ctx, id))
				if err != nil {
					return
				}
				if err := r.CommitMessages(ctx, m); err != nil {
					return
				}
				if handled.Add(1) == scaleShards {
					close(done)
				}
			}
		})
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Errorf("hand-written readers: %d of %d first records handled", handled.Load(), scaleShards)
	}
	cancel()
	wg.Wait()
}
