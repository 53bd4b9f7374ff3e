package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/fstest"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestStartRefusesStaleTenants: with RequiredVersion, the app does not
// start while registered tenants are behind, naming how many and which;
// once migrated, it starts.
func TestStartRefusesStaleTenants(t *testing.T) {
	f := newMigFixture(t)
	tenants := migTenants(7)
	provisionAll(t, start(t, f.module()), tenants)
	mod := f.module(modules.Migrations(f.threeSteps()), modules.RequiredVersion(3))
	app := fx.New(fx.NopLogger, mod)
	must0(t, app.Err())
	err := app.Start(context.Background())
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantMigrationBehind, "postgres", "pg", "",
		"7 registered tenants are behind migration version 3", tenants[0].String()+" (at 0)", "and 2 more")
	// Migrating (an app built, not started: the command a service runs)
	// clears it.
	rep, err := built(t, mod).MigrateAll(context.Background(), nil, migrate.Options{})
	must0(t, err)
	if rep.Done != 7 {
		t.Fatal(rep.Failures)
	}
	start(t, mod)
}

// TestRuntimeRefusesStaleTenant: a call for a tenant whose schema is
// behind (here one the registry does not know, so start could not see it)
// is refused with a coded error before its statement runs, not with the
// driver's error; after Migrate it is served.
func TestRuntimeRefusesStaleTenant(t *testing.T) {
	f := newMigFixture(t)
	stale := migTenants(1)[0]
	var d *postgres.Documents[item]
	c := start(t, f.module(modules.Migrations(f.threeSteps()), modules.RequiredVersion(3)), &d)
	// Provisioned by an older build without the registry: at version 0.
	old := start(t, postgres.Module("pg", postgres.Use(f.pool), postgres.SchemaPrefix(f.prefix),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})))
	provision(t, old, stale)
	ctx := tenancy.WithTenant(context.Background(), stale)
	_, err := d.Get(ctx, "x")
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantMigrationBehind, "postgres", "pg", "docs", "at migration version 0; the routes need 3")
	if _, err := c.Migrate(context.Background(), stale); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, "x"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("get after migrating: %v", err)
	}
	// A tenant provisioned by the new build is migrated by Provision.
	fresh := migTenants(2)[1]
	provision(t, c, fresh)
	if _, err := d.Get(tenancy.WithTenant(context.Background(), fresh), "x"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("get on a freshly provisioned tenant: %v", err)
	}
}

// TestMigrateTaggedSharedOnce: tagged routes share their tables, so the
// migration runs once there, whatever the tenants; the start-up check
// reads the shared tables.
func TestMigrateTaggedSharedOnce(t *testing.T) {
	f := newMigFixture(t)
	u := unique()
	table, static := "tdocs", "s_"+u
	_, err := f.pool.Exec(context.Background(), "CREATE SCHEMA "+static)
	must0(t, err)
	mod := func(extra ...postgres.Option) fx.Option {
		return postgres.Module("pg", append([]postgres.Option{postgres.Use(f.pool), postgres.StaticSchema(static),
			postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared(table), Write: naming.Shared(table), TenantAware: true}),
		}, extra...)...)
	}
	tenants := migTenants(3)
	provisionAll(t, start(t, mod()), tenants)
	steps := fstest.MapFS{"0001_total.sql": {Data: []byte(fmt.Sprintf("ALTER TABLE %s ADD COLUMN total int;\nINSERT INTO %s VALUES (current_schema(), 1);", table, f.counter))}}
	app := fx.New(fx.NopLogger, mod(modules.Migrations(steps), modules.RequiredVersion(1)))
	if err := app.Start(context.Background()); tenancy.CodeOf(err) != tenancy.CodeTenantMigrationBehind {
		t.Fatalf("start with the shared tables behind: %v", err)
	}
	_ = app.Stop(context.Background())
	c := start(t, mod(modules.Migrations(steps)))
	for range 2 {
		rep, err := c.MigrateAll(context.Background(), tenants, migrate.Options{})
		must0(t, err)
		if rep.Total != 1 || len(rep.Failures) != 0 {
			t.Fatalf("shared run: %+v", rep)
		}
	}
	if got := f.applied(t); len(got) != 1 || got[static][1] != 1 {
		t.Fatalf("applied: %v", got)
	}
	start(t, mod(modules.Migrations(steps), modules.RequiredVersion(1)))
}

// TestMigrationWiring: a required version above the set, a per-tenant
// requirement with no registry, and a misnamed file are refused at fx.New.
func TestMigrationWiring(t *testing.T) {
	f := newMigFixture(t)
	for name, opts := range map[string][]postgres.Option{
		"above":       {postgres.Use(f.pool), modules.Migrations(f.threeSteps()), modules.RequiredVersion(4), modules.TenantRegistry(f.reg)},
		"no registry": {postgres.Use(f.pool), modules.Migrations(f.threeSteps()), modules.RequiredVersion(3)},
		"misnamed":    {postgres.Use(f.pool), modules.Migrations(fstest.MapFS{"add_total.sql": {}}), modules.TenantRegistry(f.reg)},
	} {
		opts = append(opts, postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}))
		err := fx.New(fx.NopLogger, postgres.Module("pg", opts...)).Err()
		if tenancy.CodeOf(err) != tenancy.CodeWiringInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRegistry: teardown removes the tenant; a late, lower version never
// replaces a higher one.
func TestRegistry(t *testing.T) {
	f := newMigFixture(t)
	tenants := migTenants(3)
	c := start(t, f.module(modules.Migrations(f.threeSteps())))
	provisionAll(t, c, tenants)
	ctx := context.Background()
	must0(t, f.reg.SetVersion(ctx, tenants[0], "pg", 1))
	must0(t, c.Teardown(ctx, tenants[1]))
	ids, err := migrate.ReadyTenants(ctx, f.reg)
	must0(t, err)
	if len(ids) != 2 || ids[0] != tenants[0] || ids[1] != tenants[2] {
		t.Fatalf("ready tenants: %v", ids)
	}
	all, err := f.reg.List(ctx)
	must0(t, err)
	if all[0].Versions["pg"] != 3 {
		t.Errorf("version moved back: %v", all[0].Versions)
	}
}

// TestVersionCheckOncePerTenant: the run-time version check reads a
// tenant's version on its first call only; later calls cost the round
// trip of the statement alone.
func TestVersionCheckOncePerTenant(t *testing.T) {
	f := newMigFixture(t)
	tn := migTenants(1)[0]
	provisionAll(t, start(t, f.module(modules.Migrations(f.threeSteps()))), []tenancy.ID{tn})
	pool, writes := countedPool(t)
	var d *postgres.Documents[item]
	start(t, postgres.Module("pg", postgres.Use(pool), postgres.SchemaPrefix(f.prefix), modules.TenantRegistry(f.reg),
		modules.Migrations(f.threeSteps()), modules.RequiredVersion(3),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})), &d)
	ctx := tenancy.WithTenant(context.Background(), tn)
	var per []int64
	for range 3 {
		before := writes.Load()
		if _, err := d.Get(ctx, "x"); !errors.Is(err, document.ErrNotFound) {
			t.Fatal(err)
		}
		per = append(per, writes.Load()-before)
	}
	if per[0] < 2 || per[1] != 1 || per[2] != 1 {
		t.Errorf("round trips per Get: %v (want the first to read the version, then one each)", per)
	}
}

// TestEveryRouteCallChecksTheVersion: analytics, the outbox's write, claim
// and sweep, like document calls, refuse a tenant whose schema is behind
// the required version before their statement runs.
func TestEveryRouteCallChecksTheVersion(t *testing.T) {
	f := newMigFixture(t)
	stale := migTenants(1)[0]
	var (
		an *postgres.Analytics
		ob *postgres.Outbox
	)
	perTenant := []postgres.Option{
		postgres.AnalyticsRoute("stats", postgres.AnalyticsConfig{Source: naming.PerTenant("docs"),
			Queries: map[string]postgres.Aggregate{"n": {Agg: postgres.AggCount}}}),
		postgres.OutboxRoute("events", postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("outbox")}),
	}
	start(t, f.module(append([]postgres.Option{modules.Migrations(f.threeSteps()), modules.RequiredVersion(3)}, perTenant...)...),
		named("stats", &an), named("events", &ob))
	// Provisioned by an older build without the registry: at version 0.
	old := start(t, postgres.Module("pg", append([]postgres.Option{postgres.Use(f.pool), postgres.SchemaPrefix(f.prefix),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})}, perTenant...)...))
	provision(t, old, stale)
	ctx := tenancy.WithTenant(context.Background(), stale)
	behind := func(route string, err error) {
		t.Helper()
		_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantMigrationBehind, "postgres", "pg", route, "at migration version 0; the routes need 3")
	}
	_, err := an.Run(ctx, "n")
	behind("stats", err)
	behind("events", ob.Write(ctx, outbox.Message{EventID: "e1", Topic: "t"}))
	_, err = ob.Claim(ctx, 10)
	behind("events", err)
	_, err = postgres.SweepOutbox(ctx, ob, 0)
	behind("events", err)
	var n int
	must0(t, f.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+postgres.SchemaName(f.prefix, stale)+".outbox").Scan(&n))
	if n != 0 {
		t.Fatalf("the stale tenant's outbox holds %d rows", n)
	}
}

// TestNeverProvisionedIsNotBehind: with RequiredVersion, a tenant that was
// never provisioned is refused with tenant_not_provisioned (provision it),
// not tenant_migration_behind at version 0 (migrate it); once provisioned
// it is served.
func TestNeverProvisionedIsNotBehind(t *testing.T) {
	f := newMigFixture(t)
	fresh := migTenants(3)[2]
	var d *postgres.Documents[item]
	c := start(t, f.module(modules.Migrations(f.threeSteps()), modules.RequiredVersion(3)), &d)
	ctx := tenancy.WithTenant(context.Background(), fresh)
	_, err := d.Get(ctx, "x")
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantNotProvisioned, "postgres", "pg", "docs", "was never provisioned")
	provision(t, c, fresh)
	if _, err := d.Get(ctx, "x"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("get after provisioning: %v", err)
	}
}

// regItem is the second module's document: a type of its own, as one app
// provides each document type once.
type regItem struct{ N int }

// TestRegistrySharedByTwoModules: two modules recording their tenants in
// one registry. The first's teardown forgets its own version only: the
// tenant stays listed, with the second's, while the second still holds
// its data; the second's teardown removes the entry.
func TestRegistrySharedByTwoModules(t *testing.T) {
	f := newMigFixture(t)
	tn := migTenants(1)[0]
	var second *postgres.Client
	first := start(t, fx.Options(f.module(modules.Migrations(f.threeSteps())),
		postgres.Module("pg2", postgres.Use(f.pool), postgres.SchemaPrefix(f.prefix+"b_"), modules.TenantRegistry(f.reg), modules.AllowTeardown(),
			postgres.Document[regItem]("docs2", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}))),
		named("pg2", &second))
	provisionAll(t, first, []tenancy.ID{tn})
	provisionAll(t, second, []tenancy.ID{tn})
	ctx := context.Background()
	listed := func() map[string]int64 {
		all, err := f.reg.List(ctx)
		must0(t, err)
		for _, e := range all {
			if e.ID == tn {
				return e.Versions
			}
		}
		return nil
	}
	if v := listed(); len(v) != 2 {
		t.Fatalf("after both provisioned: %v", v)
	}
	must0(t, first.Teardown(ctx, tn))
	v := listed()
	if v == nil {
		t.Fatal("the first module's teardown removed the tenant from the registry the second still records it in")
	}
	if _, ok := v["pg"]; ok || len(v) != 1 {
		t.Fatalf("after the first module's teardown the entry's versions are %v, want the second's only", v)
	}
	must0(t, second.Teardown(ctx, tn))
	if v := listed(); v != nil {
		t.Fatalf("after both teardowns the tenant is still listed: %v", v)
	}
}
