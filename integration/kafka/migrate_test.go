package kafka_test

import (
	"context"
	"fmt"
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

// TestTopicMigrations: on the real broker, topic-configuration steps reach
// every tenant's topics of the routes they name, the registry records each
// tenant's version, a dry run lists what would change, and a rerun
// changes nothing.
func TestTopicMigrations(t *testing.T) {
	s := newSpace(t)
	routes := []kafka.Option{kafka.Brokers(s.broker), modules.RequiredIsolation(tenancy.Namespace),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders."))}),
		kafka.ProducerRoute("audit", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("audit."))})}
	reg := migrate.NewMemoryRegistry()
	build := func(opts ...kafka.Option) *migrate.Runner {
		var d struct {
			fx.In
			Provision *migrate.Runner `name:"events"`
		}
		app := fx.New(fx.NopLogger, kafka.Module("events", append(append(opts, routes...), modules.TenantRegistry(reg))...), fx.Populate(&d))
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		startApp(t, app)
		return d.Provision
	}
	// Provisioned by a build without the migrations: every tenant at 0.
	ctx := context.Background()
	ids := []tenancy.ID{tenantA, tenantB, tenantC}
	if rep, err := build().ProvisionAll(ctx, ids, migrate.Options{Concurrency: 2}); err != nil || rep.Done != 3 {
		t.Fatalf("provision: %+v, %v", rep, err)
	}
	var d struct{ Provision *migrate.Runner }
	d.Provision = build(modules.Migrations(fstest.MapFS{
		"0001_retention.json":   {Data: []byte(`{"configs": {"retention.ms": "3600000"}}`)},
		"0002_orders_size.json": {Data: []byte(`{"routes": ["orders"], "configs": {"max.message.bytes": "2000000"}}`)},
		"0003_unset.json":       {Data: []byte(`{"routes": ["audit"], "configs": {"retention.ms": null}}`)},
	}))
	plan, err := d.Provision.MigrateAll(ctx, nil, migrate.Options{DryRun: true})
	if err != nil || len(plan.Changes) != 9 {
		t.Fatalf("dry run: %d changes, %v", len(plan.Changes), err)
	}
	for i, want := range []int{9, 0} {
		rep, err := d.Provision.MigrateAll(ctx, nil, migrate.Options{Concurrency: 2})
		if err != nil || rep.Done != 3 || len(rep.Failures) != 0 || len(rep.Changes) != want {
			t.Fatalf("run %d: %d changes, failures %v, %v", i, len(rep.Changes), rep.Failures, err)
		}
	}
	all, _ := reg.List(ctx)
	for _, tn := range all {
		if tn.Versions["events"] != 3 {
			t.Errorf("registry: %s at %d", tn.ID, tn.Versions["events"])
		}
	}
	c, closeAdmin := admin(s.broker)
	defer closeAdmin()
	// A broker answers DescribeConfigs from its copy of the cluster's
	// metadata, which applies a committed change a moment later: poll.
	var wrong []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		wrong = wrong[:0]
		for _, id := range ids {
			orders := topicConfigs(t, c, s.name("orders.")+id.Hex())
			audit := topicConfigs(t, c, s.name("audit.")+id.Hex())
			if orders["retention.ms"] != "3600000" || orders["max.message.bytes"] != "2000000" {
				wrong = append(wrong, fmt.Sprintf("%s orders topic: %v", id, orders))
			}
			if _, set := audit["retention.ms"]; set || audit["max.message.bytes"] != "" {
				wrong = append(wrong, fmt.Sprintf("%s audit topic: %v", id, audit))
			}
		}
		if len(wrong) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, w := range wrong {
		t.Error(w)
	}
	unknown := fstest.MapFS{"0001_x.json": {Data: []byte(`{"routes": ["nope"], "configs": {"retention.ms": "1"}}`)}}
	if err := fx.New(fx.NopLogger, kafka.Module("events", append(routes, modules.Migrations(unknown))...)).Err(); tenancy.CodeOf(err) != tenancy.CodeWiringInvalid {
		t.Errorf("a step naming an unknown route: %v", err)
	}
}

// topicConfigs is the configs set on topic itself (not broker defaults).
func topicConfigs(t *testing.T, c *kafkago.Client, topic string) map[string]string {
	t.Helper()
	resp, err := c.DescribeConfigs(context.Background(), &kafkago.DescribeConfigsRequest{
		Resources: []kafkago.DescribeConfigRequestResource{{ResourceType: kafkago.ResourceTypeTopic, ResourceName: topic}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range resp.Resources {
		if r.Error != nil {
			t.Fatal(fmt.Errorf("%s: %w", topic, r.Error))
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigSource == 1 { // DYNAMIC_TOPIC_CONFIG
				out[e.ConfigName] = e.ConfigValue
			}
		}
	}
	return out
}
