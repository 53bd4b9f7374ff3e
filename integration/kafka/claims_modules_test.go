package kafka_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRoutedClaimAcrossModules: two routed modules whose resolvers put
// tenant A (through events1) and tenant B (through events2) on one
// cluster, their routes writing the same topic. The claim on a cluster is
// the process's, not a module's: B is refused with dedicated_target_shared
// naming events2, and nothing of B's reaches the topic.
func TestRoutedClaimAcrossModules(t *testing.T) {
	s := newSpace(t)
	topic := s.name("orders")
	only := func(id tenancy.ID) routing.Resolver {
		return func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
			if tn != id {
				return routing.Credentials{}, errors.New("no cluster for this tenant")
			}
			return routing.Credentials{Endpoint: s.broker}, nil
		}
	}
	var d struct {
		fx.In
		P1 *kafka.Producer `name:"orders1"`
		P2 *kafka.Producer `name:"orders2"`
		V1 *migrate.Runner `name:"events1"`
		V2 *migrate.Runner `name:"events2"`
	}
	app := fx.New(fx.NopLogger,
		kafka.Module("events1", kafka.Routed(only(tenantA), kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 2}}), modules.RequiredIsolation(tenancy.Dedicated),
			kafka.ProducerRoute("orders1", kafka.ProducerConfig{Topic: naming.Shared(topic)})),
		kafka.Module("events2", kafka.Routed(only(tenantB), kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 2}}), modules.RequiredIsolation(tenancy.Dedicated),
			kafka.ProducerRoute("orders2", kafka.ProducerConfig{Topic: naming.Shared(topic)})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	ctx := context.Background()
	if err := d.V1.Provision(ctx, tenantA); err != nil {
		t.Fatal(err)
	}
	if err := d.P1.Produce(tenancy.WithTenant(ctx, tenantA), kafka.Message{Value: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	refused := func(op string, err error) {
		t.Helper()
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared || te.Module != "events2" || te.Backend != "kafka" {
			t.Fatalf("B's %s through events2 on A's cluster: %v", op, err)
		}
	}
	refused("provision", d.V2.Provision(ctx, tenantB))
	refused("produce", d.P2.Produce(tenancy.WithTenant(ctx, tenantB), kafka.Message{Value: []byte("b")}))
	if n := records(t, s.broker, topic); n != 1 {
		t.Fatalf("%d records on A's topic, want only A's", n)
	}
}
