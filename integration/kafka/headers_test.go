package kafka_test

import (
	"context"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

type deadLetters struct {
	mu      sync.Mutex
	reasons map[string]error // value → reason
	scopes  map[string]string
}

func (d *deadLetters) handle(ctx context.Context, m kafkago.Message, reason error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reasons[string(m.Value)] = reason
	d.scopes[string(m.Value)] = scope(ctx)
	return nil
}

// The headers opt-in binds each record's tenant from its header; records
// with a missing or malformed header are dead-lettered, never handled.
func TestTenantFromHeaders(t *testing.T) {
	s := newSpace(t)
	got, audit := newReceived(), newReceived()
	dead := &deadLetters{reasons: map[string]error{}, scopes: map[string]string{}}
	var p struct {
		fx.In
		Producer  *kafka.Producer `name:"orders"`
		Provision *migrate.Runner `name:"events"`
	}
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared(s.name("orders"))}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("billing"), Handle: got.handle,
				TenantFromHeaders: true, DeadLetter: dead.handle, Topic: naming.Shared(s.name("orders"))}),
			// Unbound: every record, tenant-global, whatever its headers say.
			kafka.Consumer("audit", kafka.ConsumerConfig{Group: s.name("audit"), Handle: audit.handle, Topic: naming.Shared(s.name("orders"))}),
		),
		fx.Populate(&p),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 { // idempotent
		if err := p.Provision.ProvisionShared(ctx); err != nil {
			t.Fatal(err)
		}
	}
	startApp(t, app)

	values := produceEach(t, p.Producer, 3, tenantA, tenantB)
	// A caller cannot choose the tenant header: the producer writes its own.
	spoof := tenantA.String() + "/spoof"
	err := p.Producer.Produce(tenancy.WithTenant(ctx, tenantA), kafka.Message{Value: []byte(spoof),
		Headers: []kafkago.Header{{Key: kafka.HeaderTenant, Value: []byte(tenantB.String())}}})
	if err != nil {
		t.Fatal(err)
	}
	values = append(values, spoof)

	// Records from outside the adapter, with bad tenant headers.
	raw := rawWriter(t, s.broker)
	bad := map[string][]kafkago.Header{
		"missing":   nil,
		"malformed": {{Key: kafka.HeaderTenant, Value: []byte("tenant-a")}},
		"nil-uuid":  {{Key: kafka.HeaderTenant, Value: []byte("00000000-0000-0000-0000-000000000000")}},
		"two":       {{Key: kafka.HeaderTenant, Value: []byte(tenantA.String())}, {Key: kafka.HeaderTenant, Value: []byte(tenantB.String())}},
		"braced":    {{Key: kafka.HeaderTenant, Value: []byte("{" + tenantA.String() + "}")}},
	}
	for v, hs := range bad {
		if err := raw.WriteMessages(ctx, kafkago.Message{Topic: s.name("orders"), Value: []byte(v), Headers: hs}); err != nil {
			t.Fatal(err)
		}
	}
	// A tenant-global (unbound) produce carries no tenant header either.
	if err := p.Producer.Produce(tenancy.WithGlobal(ctx), kafka.Message{Value: []byte("global")}); err != nil {
		t.Fatal(err)
	}
	bad["global"] = nil

	got.waitFor(t, values...)
	requireOwnTenant(t, got, values)
	for v := range bad {
		values = append(values, v)
	}
	audit.waitFor(t, values...)
	if by, _ := audit.snapshot(); len(by) != 1 || len(by["global"]) != len(values) {
		t.Errorf("unbound consumer scopes: %v", by)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		dead.mu.Lock()
		n := len(dead.reasons)
		dead.mu.Unlock()
		if n == len(bad) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dead-lettered %d of %d", n, len(bad))
		}
		time.Sleep(20 * time.Millisecond)
	}
	dead.mu.Lock()
	defer dead.mu.Unlock()
	for v := range bad {
		if tenancy.CodeOf(dead.reasons[v]) != tenancy.CodeInvalidTenantHeader {
			t.Errorf("%s: reason %v", v, dead.reasons[v])
		}
		if dead.scopes[v] != "global" {
			t.Errorf("%s dead-lettered under %s", v, dead.scopes[v])
		}
		if s := got.scopeOf(v); s != "" {
			t.Errorf("%s was handled (under %s)", v, s)
		}
	}
}
