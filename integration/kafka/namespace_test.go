package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

var (
	tenantA = tenancytest.TenantA
	tenantB = tenancytest.TenantB
	tenantC = tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")
)

func tenants(ids ...tenancy.ID) shards.TenantsFunc {
	return func(context.Context) ([]tenancy.ID, error) { return ids, nil }
}

type deps struct {
	fx.In
	Producer  *kafka.Producer `name:"orders"`
	Provision *migrate.Runner `name:"events"`
}

// probe is the cross-tenant boundary probe over a producer and a sharded consumer:
// a record is "visible" to a tenant when that tenant's consumer handled it.
func probe(t *testing.T, p *kafka.Producer, got *received) {
	value := fmt.Sprintf("probe-%d", time.Now().UnixNano())
	tenancytest.Boundary(t, tenancytest.Probe{
		Write: func(ctx context.Context) error { return p.Produce(ctx, kafka.Message{Value: []byte(value)}) },
		Read: func(ctx context.Context) (bool, error) {
			got.waitFor(t, value) // delivered somewhere; then ask where
			id, _ := tenancy.FromContext(ctx)
			return got.scopeOf(value) == id.String(), nil
		},
	})
}

// produceEach writes n records per tenant, each value naming its tenant.
func produceEach(t *testing.T, p *kafka.Producer, n int, ids ...tenancy.ID) []string {
	t.Helper()
	var all []string
	for _, id := range ids {
		ctx := tenancy.WithTenant(context.Background(), id)
		for i := range n {
			v := fmt.Sprintf("%s/%d", id, i)
			if err := p.Produce(ctx, kafka.Message{Key: []byte(v), Value: []byte(v)}); err != nil {
				t.Fatal(err)
			}
			all = append(all, v)
		}
	}
	return all
}

// requireOwnTenant asserts every value was handled only under the tenant
// it names, exactly once.
func requireOwnTenant(t *testing.T, got *received, values []string) {
	t.Helper()
	_, count := got.snapshot()
	for _, v := range values {
		owner, _, _ := strings.Cut(v, "/")
		if s := got.scopeOf(v); s != owner {
			t.Errorf("%s handled under %s", v, s)
		}
		if count[v] != 1 {
			t.Errorf("%s handled %d times", v, count[v])
		}
	}
}

func TestNamespacePerTenantTopics(t *testing.T) {
	s := newSpace(t)
	got := newReceived()
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker), modules.RequiredIsolation(tenancy.Namespace),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders."))}),
			// A repeated tenant still gets one reader: each record is handled once.
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("billing"), Handle: got.handle, WorkerConfig: shards.WorkerConfig{Tenants: tenants(tenantA, tenantB, tenantA)}, Topic: naming.PerTenant(s.name("orders."))}),
		),
		fx.Populate(&d),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	// Topics exist before the consumers start.
	ctx := context.Background()
	for _, id := range []tenancy.ID{tenantA, tenantB} {
		for range 2 { // idempotent
			if err := d.Provision.Provision(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	startApp(t, app)

	values := produceEach(t, d.Producer, 5, tenantA, tenantB)
	got.waitFor(t, values...)
	probe(t, d.Producer, got)
	requireOwnTenant(t, got, values)

	topic, err := d.Producer.TopicFor(tenancy.WithTenant(ctx, tenantA))
	if err != nil || topic != s.name("orders.")+tenantA.Hex() {
		t.Fatalf("topic %q %v", topic, err)
	}
	if err := d.Producer.Produce(ctx, kafka.Message{Value: []byte("x")}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("unbound produce: %v", err)
	}
}
