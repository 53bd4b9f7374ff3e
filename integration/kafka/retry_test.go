package kafka_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// A failing handler is retried, the record stays uncommitted meanwhile,
// and the next record waits behind it (per-partition order holds).
func TestHandlerErrorsAreRetried(t *testing.T) {
	s := newSpace(t)
	got := newReceived()
	var mu sync.Mutex
	attempts := map[string]int{}
	var order []string
	flaky := func(ctx context.Context, m kafkago.Message) error {
		mu.Lock()
		attempts[string(m.Value)]++
		n := attempts[string(m.Value)]
		if n > 2 || !strings.HasSuffix(string(m.Value), "/0") {
			order = append(order, string(m.Value))
		}
		mu.Unlock()
		if strings.HasSuffix(string(m.Value), "/0") && n <= 2 {
			return errors.New("not yet")
		}
		return got.handle(ctx, m)
	}
	var errs []error
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders."))}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("g"), Handle: flaky, WorkerConfig: shards.WorkerConfig{Tenants: tenants(tenantA), Backoff: 10 * time.Millisecond, OnError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }},
				Topic: naming.PerTenant(s.name("orders."))}),
		),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := d.Provision.Provision(context.Background(), tenantA); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	values := produceEach(t, d.Producer, 3, tenantA)
	got.waitFor(t, values...)
	requireOwnTenant(t, got, values)
	mu.Lock()
	defer mu.Unlock()
	if attempts[values[0]] != 3 || len(errs) < 2 {
		t.Fatalf("attempts %v, errors %v", attempts, errs)
	}
	if strings.Join(order, " ") != strings.Join(values, " ") {
		t.Fatalf("handled out of order: %v", order)
	}
}

// An assignment that cannot be read fails OnStart: no reader runs.
func TestShardAssignmentErrorFailsStart(t *testing.T) {
	s := newSpace(t)
	boom := func(context.Context) ([]tenancy.ID, error) { return nil, errors.New("tenant registry down") }
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("g"), Handle: noHandle, WorkerConfig: shards.WorkerConfig{Tenants: boom}, Topic: naming.PerTenant(s.name("orders."))})))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "tenant registry down") {
		t.Fatalf("start: %v", err)
	}
}

func noHandle(context.Context, kafkago.Message) error { return nil }

// The broker vanishing mid-run: producing fails with an error (no panic),
// and the app still stops cleanly, leaving no goroutine behind. The app
// reaches the test broker only through a gate on its gated listener;
// closing the gate takes the broker away from the app, not from others.
func TestBrokerGoneMidRun(t *testing.T) {
	s := newSpace(t)
	g := onGatedListener(t)
	g.open(t)
	got := newReceived()
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(g.addr()),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders."))}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("g"), Handle: got.handle, WorkerConfig: shards.WorkerConfig{Tenants: tenants(tenantA), OnError: func(error) {}},
				Topic: naming.PerTenant(s.name("orders."))})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Provision.Provision(ctx, tenantA); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	values := produceEach(t, d.Producer, 1, tenantA)
	got.waitFor(t, values...)
	g.close()
	if err := d.Producer.Produce(tenancy.WithTenant(ctx, tenantA), kafka.Message{Value: []byte("lost")}); err == nil {
		t.Fatal("produced with the broker gone")
	}
	stopCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	begin := time.Now()
	if err := app.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v with the broker gone", time.Since(begin))
}
