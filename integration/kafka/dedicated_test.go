package kafka_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Dedicated: each tenant's records go to its own cluster, through a routed
// client built from its own credentials. Tenant A's cluster is the real
// test broker; tenant B's is kfake, in-process, since a second real cluster
// would cost another JVM on every run.
func TestDedicatedRoutedClusters(t *testing.T) {
	s := newSpace(t)
	brokerA := s.broker
	_, brokerB := fakeCluster(t)
	endpoints := map[tenancy.ID]string{tenantA: brokerA, tenantB: brokerB}
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		ep, ok := endpoints[id]
		if !ok {
			return routing.Credentials{}, fmt.Errorf("no cluster for tenant %s", id)
		}
		return routing.Credentials{Endpoint: ep}, nil
	}
	got := newReceived()
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Routed(resolve, 4), kafka.RequiredIsolation(tenancy.Dedicated),
			kafka.ProducerRoute("orders", kafka.Topic(s.name("orders"))),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("billing"), Handle: got.handle, Tenants: tenants(tenantA, tenantB)},
				kafka.Topic(s.name("orders"))),
		),
		fx.Populate(&d),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []tenancy.ID{tenantA, tenantB} {
		if err := d.Provision.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	startApp(t, app)

	values := produceEach(t, d.Producer, 5, tenantA, tenantB)
	got.waitFor(t, values...)
	probe(t, d.Producer, got)
	requireOwnTenant(t, got, values)

	// A tenant with no credentials gets an error, never another's cluster.
	if err := d.Producer.Produce(tenancy.WithTenant(ctx, tenantC), kafka.Message{Value: []byte("c")}); err == nil {
		t.Fatal("tenant without a cluster produced")
	}
	if err := d.Producer.Produce(tenancy.WithGlobal(ctx), kafka.Message{Value: []byte("g")}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("global produce on a routed client: %v", err)
	}
}
