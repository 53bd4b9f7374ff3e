package kafka_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestProvisionAllDryRunListsTheTopics: on the real broker, ProvisionAll's
// dry run lists each tenant's per-tenant topics the broker lacks (a topic
// two routes share once, a static topic never) and the steps that would
// run; afterwards the broker has none of the space's topics and the
// registry is empty. A provisioned tenant has nothing to create and no
// step to run; the zero tenant is refused.
func TestProvisionAllDryRunListsTheTopics(t *testing.T) {
	s := newSpace(t)
	reg := migrate.NewMemoryRegistry()
	var d struct {
		fx.In
		Runner *migrate.Runner `name:"events"`
	}
	app := fx.New(fx.NopLogger, kafka.Module("events", kafka.Brokers(s.broker), modules.TenantRegistry(reg),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders."))}),
		kafka.ProducerRoute("again", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders."))}),
		kafka.ProducerRoute("audit", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("audit."))}),
		kafka.ProducerRoute("static", kafka.ProducerConfig{Topic: naming.Shared(s.name("static"))}),
		modules.Migrations(fstest.MapFS{"0001_retention.json": {Data: []byte(`{"configs": {"retention.ms": "3600000"}}`)}})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	ctx := context.Background()
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	want := func(id tenancy.ID) []string {
		return []string{s.name("orders.") + id.Hex(), s.name("audit.") + id.Hex(), "step 1"}
	}
	rep, err := d.Runner.ProvisionAll(ctx, []tenancy.ID{a, b, {}}, migrate.Options{DryRun: true, Concurrency: 1})
	if err != nil || rep.Done != 2 || len(rep.Failures) != 1 || tenancy.CodeOf(rep.Failures[0].Err) != tenancy.CodeTenantUnbound {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	got := testsvc.Plan(rep)
	for _, id := range []tenancy.ID{a, b} {
		if !slices.Equal(got[id], want(id)) {
			t.Errorf("plan of %s: %q, want %q", id, got[id], want(id))
		}
	}
	// The broker has none of the space's topics.
	c, closeAdmin := admin(s.broker)
	defer closeAdmin()
	md, err := c.Metadata(ctx, &kafkago.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range md.Topics {
		if strings.HasPrefix(tp.Name, s.prefix) {
			t.Errorf("a dry run created topic %s", tp.Name)
		}
	}
	if all, _ := reg.List(ctx); len(all) != 0 {
		t.Fatalf("a dry run registered %+v", all)
	}

	if err := d.Runner.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	rep, err = d.Runner.ProvisionAll(ctx, []tenancy.ID{a, b}, migrate.Options{DryRun: true, Concurrency: 1})
	if got := testsvc.Plan(rep); err != nil || rep.Done != 2 || len(got[a]) != 0 || !slices.Equal(got[b], want(b)) {
		t.Fatalf("after provisioning A: %+v, %v", got, err)
	}
}
