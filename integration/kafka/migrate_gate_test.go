package kafka_test

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestVersionGateIsPerApp: two apps built from one kafka.Module option
// value each read a tenant's version themselves. The first app lets A
// through at version 1 and remembers it; A's topic is then changed behind
// its back (its retention no longer what step 1 set), and the second app,
// started after that, refuses A: what the first app remembered is not the
// second's.
func TestVersionGateIsPerApp(t *testing.T) {
	s := newSpace(t)
	ctx := context.Background()
	one := fstest.MapFS{"0001_retention.json": topicSteps["0001_retention.json"]}
	mod := kafka.Module("events", kafka.Brokers(s.broker), modules.RequiredIsolation(tenancy.Namespace),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders."))}),
		modules.Migrations(one), modules.RequiredVersion(1), modules.TenantRegistry(migrate.NewMemoryRegistry()))
	build := func() versionApp {
		var d versionApp
		app := fx.New(fx.NopLogger, mod, fx.Populate(&d))
		startApp(t, app)
		return d
	}
	first := build()
	if err := first.Provision.Provision(ctx, tenantA); err != nil {
		t.Fatal(err)
	}
	if err := first.Orders.Produce(tenancy.WithTenant(ctx, tenantA), kafka.Message{Value: []byte("x")}); err != nil {
		t.Fatalf("A at version 1 in the first app: %v", err)
	}

	c, closeAdmin := admin(s.broker)
	defer closeAdmin()
	topic := s.name("orders.") + tenantA.Hex()
	resp, err := c.AlterConfigs(ctx, &kafkago.AlterConfigsRequest{Resources: []kafkago.AlterConfigRequestResource{{
		ResourceType: kafkago.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafkago.AlterConfigRequestConfig{{Name: "retention.ms", Value: "7200000"}},
	}}})
	if err == nil {
		for _, e := range resp.Errors {
			err = e
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); topicConfigs(t, c, topic)["retention.ms"] != "7200000"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the broker did not show the changed retention")
		}
	}

	second := build()
	err = second.Orders.Produce(tenancy.WithTenant(ctx, tenantA), kafka.Message{Value: []byte("y")})
	requireBehind(t, err, "orders", "tenant "+tenantA.String()+" is at migration version 0", "need 1")
}
