package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Routed credentials authenticate: each tenant's client logs in with its
// own user on the test broker's SASL/PLAIN listener, and a tenant whose
// secret is wrong gets an error, not data.
func TestRoutedCredentialsAuthenticate(t *testing.T) {
	s := newSpace(t)
	broker := testsvc.KafkaSASLBroker(t)
	creds := map[tenancy.ID]routing.Credentials{
		tenantA: {Endpoint: broker, User: testsvc.KafkaSASLUser, Secret: testsvc.KafkaSASLSecret},
		// The same listener under another name: a target of B's own, so the
		// refusal below is the broker's authentication, not the shared-target
		// check (which compares targets as spelled).
		tenantB: {Endpoint: strings.Replace(broker, "127.0.0.1", "localhost", 1), User: testsvc.KafkaSASLUser, Secret: "wrong"},
	}
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) { return creds[id], nil }
	got := newReceived()
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Routed(resolve, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4}}),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared(s.name("orders"))}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("g"), Handle: got.handle, WorkerConfig: shards.WorkerConfig{Tenants: tenants(tenantA)}, Topic: naming.Shared(s.name("orders"))})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Provision.Provision(ctx, tenantA); err != nil {
		t.Fatal(err)
	}
	if err := d.Provision.Provision(ctx, tenantB); err == nil {
		t.Fatal("provisioned with a wrong secret")
	} else if errors.Is(err, tenancy.CodeDedicatedTargetShared) {
		t.Fatalf("B was refused as sharing A's target, so its secret was never checked: %v", err)
	}
	startApp(t, app)
	values := produceEach(t, d.Producer, 2, tenantA)
	got.waitFor(t, values...)
	requireOwnTenant(t, got, values)
	if err := d.Producer.Produce(tenancy.WithTenant(ctx, tenantB), kafka.Message{Value: []byte("b")}); err == nil {
		t.Fatal("produced with a wrong secret")
	}
}
