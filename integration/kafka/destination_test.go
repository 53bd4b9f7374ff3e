package kafka_test

import (
	"context"
	"fmt"
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
)

// relay forwards rows the way an outbox relay does: each under its own
// tenant (outbox.Bind), retried with a backoff until delivered.
func relay(t *testing.T, dest outbox.Destination, rows []outbox.Message) (failures int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range rows {
		for {
			err := dest.Deliver(outbox.Bind(context.Background(), m), m)
			if err == nil {
				break
			}
			failures++
			if time.Now().After(deadline) {
				t.Fatalf("row %s never delivered: %v", m.EventID, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return failures
}

func rows(n int, ids ...tenancy.ID) []outbox.Message {
	var out []outbox.Message
	for _, id := range ids {
		for i := range n {
			v := fmt.Sprintf("%s/%d", id, i)
			out = append(out, outbox.Message{Tenant: id, EventID: "evt-" + v, Topic: "orders",
				Key: []byte(v), Payload: []byte(v), Headers: map[string]string{"kind": "created"}})
		}
	}
	return out
}

type eventIDs struct {
	mu  sync.Mutex
	ids map[string]string // value → event id header
}

func (e *eventIDs) wrap(next kafka.Handler) kafka.Handler {
	return func(ctx context.Context, m kafkago.Message) error {
		e.mu.Lock()
		for _, h := range m.Headers {
			if h.Key == kafka.HeaderEventID {
				e.ids[string(m.Value)] = string(h.Value)
			}
		}
		e.mu.Unlock()
		return next(ctx, m)
	}
}

// Outbox rows of three tenants → destination → per-tenant topics →
// sharded consumer: each handled once, under its own tenant.
func TestDestinationPerTenantTopics(t *testing.T) {
	s := newSpace(t)
	got := newReceived()
	ids := &eventIDs{ids: map[string]string{}}
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker), modules.RequiredIsolation(tenancy.Namespace),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders-"))}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("billing"), Handle: ids.wrap(got.handle),
				WorkerConfig: shards.WorkerConfig{Tenants: tenants(tenantA, tenantB, tenantC)}, Topic: naming.PerTenant(s.name("orders-"))}),
		),
		fx.Populate(&d),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []tenancy.ID{tenantA, tenantB, tenantC} {
		if err := d.Provision.Provision(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	startApp(t, app)

	rs := rows(4, tenantA, tenantB, tenantC)
	if n := relay(t, d.Producer, rs); n != 0 {
		t.Fatalf("%d delivery failures with the broker up", n)
	}
	var values []string
	for _, m := range rs {
		values = append(values, string(m.Payload))
	}
	got.waitFor(t, values...)
	requireOwnTenant(t, got, values)
	ids.mu.Lock()
	for _, m := range rs {
		if ids.ids[string(m.Payload)] != m.EventID {
			t.Errorf("%s: event id header %q", m.Payload, ids.ids[string(m.Payload)])
		}
	}
	ids.mu.Unlock()

	// A deployment-wide row has no per-tenant topic, and a row is never
	// delivered under another tenant than its own.
	global := outbox.Message{EventID: "g", Payload: []byte("g")}
	if err := d.Producer.Deliver(outbox.Bind(context.Background(), global), global); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("global row: %v", err)
	}
	if err := d.Producer.Deliver(tenancy.WithTenant(context.Background(), tenantB), rs[0]); err == nil {
		t.Fatal("tenant A's row delivered under tenant B")
	}
}

// The broker is gone at start, reduced to the destination: with no broker,
// deliveries fail (and the consumer keeps retrying); once a broker
// appears, everything is delivered and handled exactly once. The app
// reaches the test broker through a gate, closed at first.
func TestBrokerUnreachableAtStart(t *testing.T) {
	s := newSpace(t)
	g := newGate(t, s.broker)
	// The topics exist on the broker the app cannot reach yet.
	createTopics(t, s.broker, s.name("late.")+tenantA.Hex(), s.name("late.")+tenantB.Hex())
	got := newReceived()
	var errs sync.Map
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(g.addr()),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("late."))}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("billing"), Handle: got.handle,
				WorkerConfig: shards.WorkerConfig{Tenants: tenants(tenantA, tenantB), OnError: func(err error) { errs.Store(err.Error(), true) }}, Topic: naming.PerTenant(s.name("late."))}),
		),
		fx.Populate(&d),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app) // starts with no broker: nothing dials in OnStart

	rs := rows(3, tenantA, tenantB)
	if err := d.Producer.Deliver(outbox.Bind(context.Background(), rs[0]), rs[0]); err == nil {
		t.Fatal("delivered with no broker")
	}
	if err := d.Provision.Provision(context.Background(), tenantA); err == nil {
		t.Fatal("provisioned with no broker")
	}

	opened := make(chan struct{})
	go func() {
		defer close(opened)
		time.Sleep(300 * time.Millisecond)
		g.open(t)
	}()
	defer func() { <-opened }()
	failures := relay(t, d.Producer, rs)
	t.Logf("%d failed attempts before the broker appeared", failures)
	var values []string
	for _, m := range rs {
		values = append(values, string(m.Payload))
	}
	got.waitFor(t, values...)
	requireOwnTenant(t, got, values)
}
