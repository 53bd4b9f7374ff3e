package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRequiredVersionRoutedStaticTopic: a routed module whose route has
// one static topic name, A's on the test broker and B's on the second
// cluster. Each tenant's topic is its own (on its own cluster), so its
// version is checked at run time too: with a registry that wrongly says
// both are current the app starts, A (migrated) is served, and B (never
// migrated) is refused with tenant_migration_behind before anything
// reaches its cluster.
func TestRequiredVersionRoutedStaticTopic(t *testing.T) {
	s := newSpace(t)
	brokerB := strings.Split(testsvc.KafkaSecondBroker(t), ",")[0]
	s.alsoOn(t, brokerB)
	topic := s.name("orders")
	clusters := map[tenancy.ID]string{tenantA: s.broker, tenantB: brokerB}
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		ep, ok := clusters[id]
		if !ok {
			return routing.Credentials{}, fmt.Errorf("no cluster for tenant %s", id)
		}
		return routing.Credentials{Endpoint: ep}, nil
	}
	steps := fstest.MapFS{
		"0001_retention.json": {Data: []byte(`{"configs": {"retention.ms": "3600000"}}`)},
		"0002_size.json":      {Data: []byte(`{"routes": ["orders"], "configs": {"max.message.bytes": "2000000"}}`)},
	}
	ctx := context.Background()
	lying := migrate.NewMemoryRegistry()
	for _, id := range []tenancy.ID{tenantA, tenantB} {
		_ = lying.Put(ctx, id, migrate.Ready)
		_ = lying.SetVersion(ctx, id, "events", 2)
	}
	var d struct {
		fx.In
		Orders    *kafka.Producer `name:"orders"`
		Provision *migrate.Runner `name:"events"`
	}
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Routed(resolve, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4}}), modules.RequiredIsolation(tenancy.Dedicated),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared(topic)}),
			modules.Migrations(steps), modules.RequiredVersion(2), modules.TenantRegistry(lying)),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	// Provisioned by a build without the migrations: both at 0.
	var bare struct {
		fx.In
		Provision *migrate.Runner `name:"events"`
	}
	bareApp := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Routed(resolve, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4}}), kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared(topic)})),
		fx.Populate(&bare))
	if err := bareApp.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, bareApp)
	for _, id := range []tenancy.ID{tenantA, tenantB} {
		if err := bare.Provision.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if ch, err := d.Provision.Migrate(ctx, tenantA); err != nil || len(ch) != 2 {
		t.Fatalf("migrating A: %v, %v", ch, err)
	}

	for range 2 { // the refusal is not remembered as current
		err := d.Orders.Produce(tenancy.WithTenant(ctx, tenantB), kafka.Message{Value: []byte("b")})
		requireBehind(t, err, "orders", "tenant "+tenantB.String()+" is at migration version 0", "need 2")
	}
	if n := records(t, brokerB, topic); n != 0 {
		t.Fatalf("a refused Produce for B left %d records on B's cluster", n)
	}
	if err := d.Orders.Produce(tenancy.WithTenant(ctx, tenantA), kafka.Message{Value: []byte("a")}); err != nil {
		t.Fatalf("A after its migration: %v", err)
	}
	if n := records(t, s.broker, topic); n != 1 {
		t.Fatalf("A's cluster holds %d records, want 1", n)
	}
}
