package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

const scaleTopics = 1000

// scaleKafka is a broker with per-tenant topics provisioned (scaleTopics
// unless said otherwise), each holding one record.
type scaleKafka struct {
	broker, prefix string
	ids            []tenancy.ID
	ctxs           []context.Context
	producer       *kafka.Producer
}

// newScaleKafkaFake is scaleKafka on an in-process kfake cluster.
func newScaleKafkaFake(t *testing.T) *scaleKafka {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return newScaleKafka(t, c.ListenAddrs()[0], "orders.", scaleTopics)
}

func newScaleKafka(t *testing.T, broker, prefix string, topics int) *scaleKafka {
	s := &scaleKafka{broker: broker, prefix: prefix}
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker), kafka.TuneWriter(func(w *kafkago.Writer) { w.BatchSize = 1 }),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.prefix)})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	s.producer = d.Producer
	began := time.Now()
	for i := range topics {
		id := tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1))
		s.ids = append(s.ids, id)
		s.ctxs = append(s.ctxs, tenancy.WithTenant(context.Background(), id))
	}
	rep, _ := d.Provision.ProvisionAll(context.Background(), s.ids, migrate.Options{Concurrency: 4})
	if len(rep.Failures) > 0 || rep.Err != nil {
		t.Fatalf("provisioning: %v %v", rep.Failures, rep.Err)
	}
	// A broker serves a created topic a moment after CreateTopics answers;
	// after a thousand topics in ten requests, on a busy broker, the
	// producer's metadata can lag longer than its retries.
	for i := range s.ids {
		for wait := time.Now(); ; {
			err := d.Producer.Produce(s.ctxs[i], kafka.Message{Value: []byte("first")})
			if err == nil {
				break
			}
			if !errors.Is(err, kafkago.UnknownTopicOrPartition) || time.Since(wait) > time.Minute {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	t.Logf("provisioned %d tenant topics on %s, one record each, in %v", topics, broker, time.Since(began).Round(time.Millisecond))
	return s
}

// TestRatioScaleKafka: a synchronous produce cycling over 1,000 per-tenant
// topics vs a raw kafka-go Writer naming the topic per message, on kfake in
// process.
func TestRatioScaleKafka(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	s := newScaleKafkaFake(t)
	raw := rawWriter(t, s.broker)
	raw.BatchSize = 1
	key, value := []byte("order-1"), []byte(`{"total":42}`)
	// Each side walks every topic over its rounds (200 a round).
	oursAt, baseAt := ratio.Cycle(scaleTopics), ratio.Cycle(scaleTopics)
	ours := func(n int) {
		for range n {
			if err := s.producer.Produce(s.ctxs[oursAt()], kafka.Message{Key: key, Value: value}); err != nil {
				t.Fatal(err)
			}
		}
	}
	base := func(n int) {
		for range n {
			i := baseAt()
			id := s.ids[i]
			m := kafkago.Message{Topic: s.prefix + id.Hex(), Key: key, Value: value, Headers: []kafkago.Header{
				{Key: kafka.HeaderTenant, Value: []byte(id.String())},
				{Key: kafka.HeaderEventID, Value: []byte("0123456789abcdef0123456789abcdef")},
			}}
			if err := raw.WriteMessages(s.ctxs[i], m); err != nil {
				t.Fatal(err)
			}
		}
	}
	label := "S" + strconv.Itoa(scaleTopics)
	ratio.ReportScale(t, ratio.Pair{Label: label, Name: "kafka-tenant-topic-produce", Ours: ours, Baseline: base, Rounds: 15, Iterations: 200}, 1.05)
}

// TestRatioScaleKafkaShardedStart: a sharded consumer's start-up with its
// 1,000 assigned tenants (start until every tenant's first record is
// handled, then stop) vs hand-written group readers doing the same, on the
// real test broker: one in-process kfake broker does not serve 1,000
// group readers in time on this machine (reads time out, dials are reset).
func TestRatioScaleKafkaShardedStart(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	sp := newSpace(t)
	s := newScaleKafka(t, sp.broker, sp.name("orders."), scaleTopics)
	var round atomic.Int64
	group := func() string { return sp.name(fmt.Sprintf("g%d", round.Add(1))) }
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
	ratio.ReportScale(t, ratio.Pair{Label: "S" + strconv.Itoa(scaleTopics), Name: "kafka-sharded-consumer-start", Ours: oursStart, Baseline: handStart, Rounds: 5, Iterations: 1}, 1.05)
}

// startSharded starts a sharded consumer over every tenant, waits until
// each tenant's first record was handled, and stops it.
func (s *scaleKafka) startSharded(t *testing.T, group string) {
	var handled atomic.Int64
	done := make(chan struct{})
	// Reader errors (fetch timeouts of an overloaded broker) are retried
	// on both sides; the hand-written readers drop them, so ours logs
	// nowhere either.
	app := fx.New(fx.NopLogger, fx.Supply(slog.New(slog.DiscardHandler)),
		kafka.Module("consume", kafka.Brokers(s.broker),
			kafka.Consumer("orders", kafka.ConsumerConfig{Group: group,
				WorkerConfig: shards.WorkerConfig{Tenants: tenants(s.ids...)},
				Handle: func(context.Context, kafkago.Message) error {
					if handled.Add(1) == scaleTopics {
						close(done)
					}
					return nil
				}, Topic: naming.PerTenant(s.prefix)})))
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
		t.Fatalf("sharded consumer: %d of %d first records handled", handled.Load(), scaleTopics)
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
	for _, id := range s.ids {
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
				if handled.Add(1) == scaleTopics {
					close(done)
				}
			}
		})
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Errorf("hand-written readers: %d of %d first records handled", handled.Load(), scaleTopics)
	}
	cancel()
	wg.Wait()
}
