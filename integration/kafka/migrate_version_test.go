package kafka_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

var topicSteps = fstest.MapFS{
	"0001_retention.json":   {Data: []byte(`{"configs": {"retention.ms": "3600000"}}`)},
	"0002_orders_size.json": {Data: []byte(`{"routes": ["orders"], "configs": {"max.message.bytes": "2000000"}}`)},
	"0003_audit_unset.json": {Data: []byte(`{"routes": ["audit"], "configs": {"retention.ms": null}}`)},
}

type versionApp struct {
	fx.In
	Provision *migrate.Runner `name:"events"`
	Orders    *kafka.Producer `name:"orders"`
}

// buildEvents builds (not starts) the module "events": orders and audit
// routes with per-tenant topics and the given migrations.
func buildEvents(t *testing.T, s *space, files fstest.MapFS, opts ...kafka.Option) (*fx.App, versionApp) {
	t.Helper()
	var d versionApp
	opts = append([]kafka.Option{kafka.Brokers(s.broker), modules.RequiredIsolation(tenancy.Namespace),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders."))}),
		kafka.ProducerRoute("audit", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("audit."))})}, opts...)
	if files != nil {
		opts = append(opts, modules.Migrations(files))
	}
	app := fx.New(fx.NopLogger, kafka.Module("events", opts...), fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return app, d
}

// requireBehind fails t unless err is tenant_migration_behind naming route (when
// not empty) and every detail, with a fix that says to migrate.
func requireBehind(t *testing.T, err error, route string, detail ...string) {
	t.Helper()
	if e := tenancytest.RequireCode(t, err, tenancy.CodeTenantMigrationBehind, "kafka", "events", route, detail...); !strings.Contains(e.Fix, "migrate") {
		t.Fatalf("fix %q does not say to migrate", e.Fix)
	}
}

// TestRequiredVersionTopics: tenants A and B migrated to version 2, the
// producers needing 3. Start is refused naming both; with a registry that
// wrongly says 3, the app starts, and a Produce for A, for B, or for C
// (provisioned, never registered nor migrated) is refused before a record
// reaches its topic: the version is read from the topics' configuration.
// Migrating A applies step 3 (the topics say 2, whatever the lying
// registry says) and makes A current; B stays refused, and so does a tenant
// without topics.
func TestRequiredVersionTopics(t *testing.T) {
	s := newSpace(t)
	ctx := context.Background()
	two := fstest.MapFS{}
	for k, v := range topicSteps {
		if !strings.HasPrefix(k, "0003") {
			two[k] = v
		}
	}
	reg := migrate.NewMemoryRegistry()
	old, d := buildEvents(t, s, two, modules.TenantRegistry(reg))
	startApp(t, old)
	if rep, err := d.Provision.ProvisionAll(ctx, []tenancy.ID{tenantA, tenantB}, migrate.Options{}); err != nil || rep.Done != 2 {
		t.Fatalf("provision: %+v, %v", rep, err)
	}
	// Provisioning migrated A and B to 2: nothing is left.
	if rep, err := d.Provision.MigrateAll(ctx, nil, migrate.Options{}); err != nil || len(rep.Changes) != 0 || rep.Done != 2 {
		t.Fatalf("migrating to 2: %+v, %v", rep, err)
	}
	// C is provisioned by a build without migrations or registry: at 0.
	bare, dc := buildEvents(t, s, nil)
	startApp(t, bare)
	if err := dc.Provision.Provision(ctx, tenantC); err != nil {
		t.Fatal(err)
	}

	app, _ := buildEvents(t, s, topicSteps, modules.RequiredVersion(3), modules.TenantRegistry(reg))
	requireBehind(t, app.Start(ctx), "", "2 registered tenants are behind migration version 3", tenantA.String()+" (at 2)", tenantB.String()+" (at 2)")

	lying := migrate.NewMemoryRegistry()
	for _, id := range []tenancy.ID{tenantA, tenantB} {
		_ = lying.Put(ctx, id, migrate.Ready)
		_ = lying.SetVersion(ctx, id, "events", 3)
	}
	app, d = buildEvents(t, s, topicSteps, modules.RequiredVersion(3), modules.TenantRegistry(lying))
	startApp(t, app)
	for _, id := range []tenancy.ID{tenantA, tenantB, tenantC} {
		err := d.Orders.Produce(tenancy.WithTenant(ctx, id), kafka.Message{Value: []byte("x")})
		requireBehind(t, err, "orders", "tenant "+id.String()+" is at migration version", "need 3")
		if n := records(t, s.broker, s.name("orders.")+id.Hex()); n != 0 {
			t.Fatalf("a refused Produce for %s left %d records", id, n)
		}
	}

	if ch, err := d.Provision.Migrate(ctx, tenantA); err != nil || len(ch) != 1 || ch[0].Version != 3 {
		t.Fatalf("migrating A, whose registry says 3: %v, %v", ch, err)
	}
	if err := d.Orders.Produce(tenancy.WithTenant(ctx, tenantA), kafka.Message{Value: []byte("x")}); err != nil {
		t.Fatalf("A after its migration: %v", err)
	}
	if n := records(t, s.broker, s.name("orders.")+tenantA.Hex()); n != 1 {
		t.Fatalf("A's topic holds %d records, want 1", n)
	}
	requireBehind(t, d.Orders.Produce(tenancy.WithTenant(ctx, tenantB), kafka.Message{Value: []byte("x")}), "orders", "tenant "+tenantB.String())
	// A tenant never provisioned has no topics: at no version.
	never := tenancy.MustParseID("0d0d0d0d-0000-4000-8000-00000000000d")
	requireBehind(t, d.Orders.Produce(tenancy.WithTenant(ctx, never), kafka.Message{Value: []byte("x")}), "orders", "tenant "+never.String()+" is at migration version 0")

	// Step 3 reached A's audit topic (the broker shows a committed change
	// a moment later: poll).
	c, closeAdmin := admin(s.broker)
	defer closeAdmin()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		audit := topicConfigs(t, c, s.name("audit.")+tenantA.Hex())
		if _, set := audit["retention.ms"]; !set {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's audit topic still sets retention.ms: %v", audit)
		}
	}
	// A fresh app reads A's topics, now at 3, and lets A through.
	app, d = buildEvents(t, s, topicSteps, modules.RequiredVersion(3), modules.TenantRegistry(lying))
	startApp(t, app)
	if err := d.Orders.Produce(tenancy.WithTenant(ctx, tenantA), kafka.Message{Value: []byte("y")}); err != nil {
		t.Fatalf("A read from its topics: %v", err)
	}
}
