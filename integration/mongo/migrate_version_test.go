package mongo_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

var indexSteps = fstest.MapFS{
	"0001_by_total.json": {Data: []byte(`{"route": "orders", "indexes": [{"name": "by_total", "keys": [{"field": "value.total", "order": -1}]}]}`)},
	"0002_by_id.json":    {Data: []byte(`{"route": "orders", "indexes": [{"name": "by_total_id", "keys": [{"field": "value.total", "order": 1}, {"field": "_id", "order": 1}]}]}`)},
	"0003_by_v.json":     {Data: []byte(`{"route": "orders", "indexes": [{"name": "by_v", "keys": [{"field": "v", "order": 1}]}]}`)},
}

type ordersApp struct {
	fx.In
	Provision *mongo.Provisioner `name:"m"`
	Orders    *mongo.Documents[order]
}

// buildOrders builds (not starts) module "m" on db: a document route with
// a collection per tenant and the given migrations.
func buildOrders(t *testing.T, base []mongo.Option, files fstest.MapFS, opts ...mongo.Option) (*fx.App, ordersApp) {
	t.Helper()
	var d ordersApp
	opts = append(append(append([]mongo.Option{}, base...), modules.AllowTeardown(), modules.Migrations(files),
		mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("orders")})), opts...)
	app := fx.New(fx.NopLogger, mongo.Module("m", opts...), fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return app, d
}

// requireBehind fails t unless err is tenant_migration_behind naming route (when
// not empty) and every detail, with a fix that says to migrate.
func requireBehind(t *testing.T, err error, route string, detail ...string) {
	t.Helper()
	if e := tenancytest.RequireCode(t, err, tenancy.CodeTenantMigrationBehind, "mongodb", "m", route, detail...); !strings.Contains(e.Fix, "migrate") {
		t.Fatalf("fix %q does not say to migrate", e.Fix)
	}
}

// TestRequiredVersionMongo on FerretDB: tenants A and B at version 2, the
// routes needing 3. Start is refused naming both; with a registry that
// wrongly says 3, the app starts and a call for A, B or C (provisioned,
// never registered nor migrated) is refused before it reads or writes, the
// version coming from the tenant's own records. Migrating A through the
// runner lets A through, B stays refused; a teardown forgets A, and
// provisioning A again migrates it.
func TestRequiredVersionMongo(t *testing.T) {
	base, db := plainDB(t)
	ctx := context.Background()
	a, b := tenancytest.TenantA, tenancytest.TenantB
	c := tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")
	two := fstest.MapFS{"0001_by_total.json": indexSteps["0001_by_total.json"], "0002_by_id.json": indexSteps["0002_by_id.json"]}
	reg := migrate.NewMemoryRegistry()
	old, d := buildOrders(t, base, two, modules.TenantRegistry(reg))
	if err := old.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Stop(ctx) })
	if rep, err := d.Provision.ProvisionAll(ctx, []tenancy.ID{a, b}, migrate.Options{}); err != nil || rep.Done != 2 {
		t.Fatalf("provision: %+v, %v", rep.Failures, err)
	}
	// Provisioning migrated A and B to 2: nothing is left.
	if rep, err := d.Provision.MigrateAll(ctx, nil, migrate.Options{}); err != nil || len(rep.Changes) != 0 || rep.Done != 2 {
		t.Fatalf("migrating to 2: %+v, %v", rep, err)
	}
	// C is provisioned by a build without migrations or registry: at 0.
	bare, dc := buildOrders(t, base, nil)
	if err := bare.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bare.Stop(ctx) })
	if err := dc.Provision.Provision(ctx, c); err != nil {
		t.Fatal(err)
	}

	app, _ := buildOrders(t, base, indexSteps, modules.RequiredVersion(3), modules.TenantRegistry(reg))
	requireBehind(t, app.Start(ctx), "", "2 registered tenants are behind migration version 3", a.String()+" (at 2)", b.String()+" (at 2)")

	lying := migrate.NewMemoryRegistry()
	for _, id := range []tenancy.ID{a, b} {
		_ = lying.Put(ctx, id, migrate.Ready)
		_ = lying.SetVersion(ctx, id, "m", 3)
	}
	app, d = buildOrders(t, base, indexSteps, modules.RequiredVersion(3), modules.TenantRegistry(lying))
	if err := app.Start(ctx); err != nil {
		t.Fatalf("the registry says every tenant is current: %v", err)
	}
	t.Cleanup(func() { _ = app.Stop(ctx) })
	for _, c := range []struct {
		id   tenancy.ID
		have string
	}{{a, "2"}, {b, "2"}, {c, "0"}} {
		ctxT := tenancy.WithTenant(ctx, c.id)
		_, err := d.Orders.Create(ctxT, "o1", order{Total: 1})
		requireBehind(t, err, "orders", "tenant "+c.id.String()+" is at migration version "+c.have, "need 3")
		_, err = d.Orders.Get(ctxT, "o1")
		requireBehind(t, err, "orders", c.id.String())
	}
	if n := documents(t, db); n != 0 {
		t.Fatalf("refused calls left %d documents", n)
	}

	if ch, err := d.Provision.Migrate(ctx, a); err != nil || len(ch) != 1 {
		t.Fatalf("migrating A: %v, %v", ch, err)
	}
	if _, err := d.Orders.Create(tenancy.WithTenant(ctx, a), "o1", order{Total: 1}); err != nil {
		t.Fatalf("A after its migration: %v", err)
	}
	if n := documents(t, db); n != 1 {
		t.Fatalf("%d documents, want A's one", n)
	}
	_, err := d.Orders.Create(tenancy.WithTenant(ctx, b), "o1", order{Total: 1})
	requireBehind(t, err, "", "tenant "+b.String())

	// Torn down, A's records and collections are gone and the gate forgot
	// A: its next call finds it not provisioned. Provisioned again, A is
	// migrated with it.
	if err := d.Provision.Teardown(ctx, a); err != nil {
		t.Fatal(err)
	}
	_, err = d.Orders.Create(tenancy.WithTenant(ctx, a), "o2", order{Total: 1})
	requireNotProvisioned(t, err, a)
	if err := d.Provision.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Orders.Create(tenancy.WithTenant(ctx, a), "o2", order{Total: 1}); err != nil {
		t.Fatalf("A provisioned again, at the current version: %v", err)
	}
}

// documents counts the documents of every collection of db but the
// migration records.
func documents(t *testing.T, db string) int64 {
	t.Helper()
	d := client(t, uriA).Database(db)
	names, err := d.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		if name == "tenantwire_migrations" {
			continue
		}
		c, err := d.Collection(name).CountDocuments(context.Background(), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		n += c
	}
	return n
}

// RequiredVersion and Migrations are checked at fx.New.
func TestRequiredVersionMongoRefusedAtNew(t *testing.T) {
	base, _ := plainDB(t)
	route := mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("orders")})
	reg := modules.TenantRegistry(migrate.NewMemoryRegistry())
	for name, c := range map[string]struct {
		opts []mongo.Option
		want string
	}{
		"above newest":  {[]mongo.Option{route, modules.Migrations(indexSteps), modules.RequiredVersion(4), reg}, "above the newest migration (3)"},
		"no migrations": {[]mongo.Option{route, modules.RequiredVersion(1), reg}, "above the newest migration (0)"},
		"no registry":   {[]mongo.Option{route, modules.Migrations(indexSteps), modules.RequiredVersion(3)}, "tenants at start"},
		"unknown route": {[]mongo.Option{route, modules.Migrations(fstest.MapFS{"0001_x.json": {Data: []byte(`{"route": "audit", "indexes": [{"name": "i", "keys": [{"field": "a", "order": 1}]}]}`)}})}, `route "audit"`},
		"go step twice": {[]mongo.Option{route, modules.Migrations(indexSteps), mongo.GoSteps(mongo.GoStep{Version: 2, Name: "seed", Run: func(context.Context, func(string) (*driver.Collection, error)) error { return nil }})}, "two migrations have version 2"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, mongo.Module("m", append(c.opts, base...)...))
			if !strings.Contains(e.Detail, c.want) || e.Fix == "" || e.Module != "m" || e.Backend != "mongodb" {
				t.Fatalf("refusal %+v, want detail naming %q and a fix", e, c.want)
			}
		})
	}
	tenancytest.RequireWires(t, mongo.Module("m", append([]mongo.Option{route, modules.Migrations(indexSteps), modules.RequiredVersion(3), reg}, base...)...))
}

// requireNotProvisioned fails t unless err is tenant_not_provisioned on
// route "orders" whose fix says to provision the tenant.
func requireNotProvisioned(t *testing.T, err error, tenant tenancy.ID) {
	t.Helper()
	e := tenancytest.RequireCode(t, err, tenancy.CodeTenantNotProvisioned, "mongodb", "m", "orders", tenant.String(), "was never provisioned")
	if !strings.Contains(e.Fix, "Provision(ctx, tenant)") {
		t.Fatalf("fix %q does not say to provision", e.Fix)
	}
}

// TestNeverProvisionedIsNotBehindMongo: with RequiredVersion, a tenant
// with no migration records and no collection of its own (a collection
// per tenant; a routed tenant's own server) is refused with
// tenant_not_provisioned, not tenant_migration_behind at version 0, and
// the refused calls create nothing. Provisioned, it is behind at 0 (its
// collection is there, unmigrated); migrated, it is served. On a tagged
// route, whose collection every tenant shares, nothing tells a new tenant
// from an unmigrated one: it stays behind at 0.
func TestNeverProvisionedIsNotBehindMongo(t *testing.T) {
	ctx := context.Background()
	for name, base := range map[string]func(t *testing.T) []mongo.Option{
		"namespace": func(t *testing.T) []mongo.Option { b, _ := plainDB(t); return b },
		"dedicated": dedicated,
	} {
		t.Run(name, func(t *testing.T) {
			fresh := tenancytest.FreshTenant(t)
			app, d := buildOrders(t, base(t), indexSteps, modules.RequiredVersion(3), modules.TenantRegistry(migrate.NewMemoryRegistry()))
			if err := app.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = app.Stop(ctx) })
			ctxT := tenancy.WithTenant(ctx, fresh)
			_, err := d.Orders.Create(ctxT, "o1", order{Total: 1})
			requireNotProvisioned(t, err, fresh)
			_, err = d.Orders.Get(ctxT, "o1")
			requireNotProvisioned(t, err, fresh)

			if err := d.Provision.Provision(ctx, fresh); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.Provision.Teardown(ctx, fresh) })
			if _, err := d.Orders.Get(ctxT, "o1"); err == nil {
				t.Fatal("a refused create wrote the document")
			}
			// Provision migrates too: the tenant is current at once.
			if _, err := d.Orders.Create(ctxT, "o1", order{Total: 1}); err != nil {
				t.Fatalf("after provisioning: %v", err)
			}
		})
	}
	t.Run("tagged", func(t *testing.T) {
		base, _ := plainDB(t)
		var docs *mongo.Documents[order]
		app := fx.New(fx.NopLogger, mongo.Module("m", append(base, modules.Migrations(indexSteps), modules.RequiredVersion(3),
			modules.TenantRegistry(migrate.NewMemoryRegistry()),
			mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("orders")}))...), fx.Populate(&docs))
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = app.Stop(ctx) })
		fresh := tenancytest.FreshTenant(t)
		_, err := docs.Create(tenancy.WithTenant(ctx, fresh), "o1", order{Total: 1})
		requireBehind(t, err, "orders", "tenant "+fresh.String()+" is at migration version 0")
	})
}
