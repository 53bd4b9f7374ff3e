package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func provisionedApp(t *testing.T, s *space, opts ...kafka.Option) deps {
	t.Helper()
	var d deps
	opts = append([]kafka.Option{kafka.Brokers(s.broker), modules.RequiredIsolation(tenancy.Namespace),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders-"))})}, opts...)
	app := fx.New(fx.NopLogger, kafka.Module("events", opts...), fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	return d
}

func newTenant(i int) tenancy.ID {
	return tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-e000-%012x", i+1))
}

// topicExists asks the broker, without letting it auto-create the topic.
func topicExists(t *testing.T, broker, topic string) bool {
	t.Helper()
	tr := &kafkago.Transport{MetadataTopics: []string{topic}}
	defer tr.CloseIdleConnections()
	res, err := (&kafkago.Client{Addr: kafkago.TCP(broker), Transport: tr, Timeout: 10 * time.Second}).
		Metadata(context.Background(), &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Topics) == 1 && res.Topics[0].Error == nil
}

// Provision returns once the broker serves the new topics and the shared
// writer knows them: a produce right after it never fails, tenant after
// tenant, the writer's metadata cache warm from the previous ones.
func TestProvisionThenProduceAtOnce(t *testing.T) {
	s := newSpace(t)
	d := provisionedApp(t, s)
	for i := range 25 {
		id := newTenant(i)
		ctx := tenancy.WithTenant(context.Background(), id)
		if err := d.Provision.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := d.Producer.Produce(ctx, kafka.Message{Value: []byte("first")}); err != nil {
			t.Fatalf("tenant %d: produce right after Provision: %v", i, err)
		}
	}
}

// A tenant provisioned by another process (here another app on the same
// broker) is written to at once: the unknown topic in this app's metadata
// cache is checked with the brokers, not reported as missing.
func TestProduceAfterProvisionElsewhere(t *testing.T) {
	s := newSpace(t)
	d := provisionedApp(t, s)
	other := provisionedApp(t, s)
	warm := newTenant(100)
	ctx := context.Background()
	if err := d.Provision.Provision(ctx, warm); err != nil {
		t.Fatal(err)
	}
	if err := d.Producer.Produce(tenancy.WithTenant(ctx, warm), kafka.Message{Value: []byte("warm")}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		id := newTenant(i)
		if err := other.Provision.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := d.Producer.Produce(tenancy.WithTenant(ctx, id), kafka.Message{Value: []byte("first")}); err != nil {
			t.Fatalf("tenant %d provisioned elsewhere: %v", i, err)
		}
	}
}

// A produce (and an outbox delivery) for a tenant whose topic does not
// exist is tenant_not_provisioned, naming Provision; the topic is not
// auto-created by it (the test broker allows auto-creation).
func TestProduceUnprovisionedTenant(t *testing.T) {
	s := newSpace(t)
	d := provisionedApp(t, s)
	id := newTenant(7)
	ctx := tenancy.WithTenant(context.Background(), id)
	err := d.Producer.Produce(ctx, kafka.Message{Value: []byte("x")})
	e := tenancytest.RequireCode(t, err, tenancy.CodeTenantNotProvisioned, "kafka", "events", "orders", "does not exist")
	if !strings.Contains(e.Fix, "Provision") {
		t.Errorf("fix %q does not name Provision", e.Fix)
	}
	m := outbox.Message{Tenant: id, EventID: "e1", Payload: []byte("x")}
	_ = tenancytest.RequireCode(t, d.Producer.Deliver(outbox.Bind(context.Background(), m), m),
		tenancy.CodeTenantNotProvisioned, "kafka", "events", "orders")
	topic, _ := d.Producer.TopicFor(ctx)
	if topicExists(t, s.broker, topic) {
		t.Fatal("the produce auto-created the tenant's topic")
	}
	if err := d.Provision.Provision(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := d.Producer.Produce(ctx, kafka.Message{Value: []byte("y")}); err != nil {
		t.Fatalf("after Provision: %v", err)
	}
}

// A sharded consumer started before its tenant's topic exists reports
// tenant_not_provisioned once (not once per attempt), does not auto-create
// the topic, and consumes once the tenant is provisioned, without a
// restart.
func TestConsumerWaitsForProvision(t *testing.T) {
	s := newSpace(t)
	id := newTenant(9)
	got := newReceived()
	var mu sync.Mutex
	var coded, other []error
	d := provisionedApp(t, s, kafka.Consumer("orders-in", kafka.ConsumerConfig{
		Topic: naming.PerTenant(s.name("orders-")), Group: s.name("g"), Handle: got.handle, WorkerConfig: shards.WorkerConfig{Tenants: tenants(id), Backoff: 100 * time.Millisecond, OnError: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, tenancy.CodeTenantNotProvisioned) {
				coded = append(coded, err)
			} else {
				other = append(other, err)
			}
		}},
	}))
	time.Sleep(3 * time.Second) // several attempts
	ctx := tenancy.WithTenant(context.Background(), id)
	topic, _ := d.Producer.TopicFor(ctx)
	if topicExists(t, s.broker, topic) {
		t.Fatal("the consumer auto-created the tenant's topic")
	}
	mu.Lock()
	if len(coded) != 1 {
		t.Fatalf("%d tenant_not_provisioned reports in 3s, want 1 (others: %v)", len(coded), other)
	}
	_ = tenancytest.RequireCode(t, coded[0], tenancy.CodeTenantNotProvisioned, "kafka", "events", "orders-in")
	mu.Unlock()
	if err := d.Provision.Provision(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := d.Producer.Produce(ctx, kafka.Message{Value: []byte("late")}); err != nil {
		t.Fatal(err)
	}
	got.waitFor(t, "late")
}

// With many partitions, Provision returns only once every one has a
// leader in the brokers' own metadata: a produce to each right away
// succeeds.
func TestProvisionServesEveryPartition(t *testing.T) {
	s := newSpace(t)
	var d deps
	app := fx.New(fx.NopLogger, kafka.Module("events", kafka.Brokers(s.broker), modules.RequiredIsolation(tenancy.Namespace),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders-")), Partitions: 16})), fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	for i := range 8 {
		id := newTenant(i)
		ctx := tenancy.WithTenant(context.Background(), id)
		if err := d.Provision.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
		topic, _ := d.Producer.TopicFor(ctx)
		tr := &kafkago.Transport{MetadataTopics: []string{topic}}
		res, err := (&kafkago.Client{Addr: kafkago.TCP(s.broker), Transport: tr, Timeout: 10 * time.Second}).
			Metadata(context.Background(), &kafkago.MetadataRequest{Topics: []string{topic}})
		tr.CloseIdleConnections()
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Topics) != 1 || res.Topics[0].Error != nil || len(res.Topics[0].Partitions) != 16 {
			t.Fatalf("tenant %d: topic not served right after Provision: %+v", i, res.Topics)
		}
		for _, p := range res.Topics[0].Partitions {
			if p.Leader.Host == "" || p.Error != nil {
				t.Fatalf("tenant %d: partition %d has no leader right after Provision (%v)", i, p.ID, p.Error)
			}
		}
		var msgs []kafka.Message
		for k := range 32 {
			msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint(k)), Value: []byte("v")})
		}
		if err := d.Producer.Produce(ctx, msgs...); err != nil {
			t.Fatalf("tenant %d: produce right after Provision: %v", i, err)
		}
	}
}
