package neo4j_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// RequiredVersion's wiring is checked at fx.New: a version no file reaches,
// and a module with per-tenant databases that cannot list its tenants at
// start.
func TestRequiredVersionRefusedAtNew(t *testing.T) {
	files := threeSteps("L", true)
	// Connect does not dial: nothing here reaches a server.
	tagged := neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true})
	plain := neo4j.Connect("neo4j://127.0.0.1:1", drv.NoAuth())
	routed := neo4j.Routed(resolver, routing.Limits{})
	for name, c := range map[string]struct {
		opts []neo4j.Option
		want string
	}{
		"above newest":  {[]neo4j.Option{plain, tagged, modules.Migrations(files), modules.RequiredVersion(4)}, "above the newest migration (3)"},
		"no migrations": {[]neo4j.Option{plain, tagged, modules.RequiredVersion(1)}, "above the newest migration (0)"},
		"no registry":   {[]neo4j.Option{routed, neo4j.GraphRoute("g", neo4j.RouteConfig{}), modules.Migrations(files), modules.RequiredVersion(3)}, "tenants at start"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, neo4j.Module("m", c.opts...))
			if !strings.Contains(e.Detail, c.want) || e.Fix == "" || e.Module != "m" || e.Backend != "neo4j" {
				t.Fatalf("refusal %+v, want detail naming %q and a fix", e, c.want)
			}
		})
	}
	// A tagged module's one shared database needs no registry.
	tenancytest.RequireWires(t, neo4j.Module("m", plain, tagged, modules.Migrations(files), modules.RequiredVersion(3)))
	tenancytest.RequireWires(t, neo4j.Module("m", routed, neo4j.GraphRoute("g", neo4j.RouteConfig{}), modules.Migrations(files),
		modules.RequiredVersion(3), modules.TenantRegistry(migrate.NewMemoryRegistry())))
}

// newApp builds (not starts) a module with a graph route "g".
func newApp(t *testing.T, module string, opts ...neo4j.Option) (*fx.App, *migrate.Runner, *neo4j.Graph) {
	t.Helper()
	var m *migrate.Runner
	var g *neo4j.Graph
	app := fx.New(fx.NopLogger, neo4j.Module(module, opts...),
		fx.Invoke(fx.Annotate(func(mm *migrate.Runner, gg *neo4j.Graph) { m, g = mm, gg },
			fx.ParamTags(`name:"`+module+`"`, `name:"g"`))))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return app, m, g
}

// behind fails t unless err is tenant_migration_behind naming route (when
// not empty) and every detail, with a fix that says to migrate.
func behind(t *testing.T, err error, route string, detail ...string) {
	t.Helper()
	if e := tenancytest.RequireCode(t, err, tenancy.CodeTenantMigrationBehind, "neo4j", "", route, detail...); !strings.Contains(e.Fix, "migrate") {
		t.Fatalf("fix %q does not say to migrate", e.Fix)
	}
}

// Dedicated tenants on two servers at version 2, the routes needing 3:
// the app refuses to start naming both; with a registry that wrongly says
// 3, it starts and the run-time check, reading each server's own
// history, refuses each tenant's call before it writes; migrating A
// through the runner lets A's calls through while B stays refused.
func TestRequiredVersionRouted(t *testing.T) {
	s1, s2 := testsvc.Neo4j(t), testsvc.Neo4jSecond(t)
	label, module, ds := migrationScope(t, s1, s2)
	d1, d2 := ds[0], ds[1]
	ctx := context.Background()
	a, b := tenancytest.TenantA, tenancytest.TenantB
	routed := neo4j.Routed(aOnFirstBOnSecond(s1, s2), routing.Limits{})
	route := neo4j.GraphRoute("g", neo4j.RouteConfig{})
	all := threeSteps(label, false)
	two := threeSteps(label, false)
	delete(two, "0003_by_name.cypher")

	reg := migrate.NewMemoryRegistry()
	for _, id := range []tenancy.ID{a, b} {
		if err := reg.Put(ctx, id, migrate.Ready); err != nil {
			t.Fatal(err)
		}
	}
	m2, _ := startMigrator(t, module, routed, route, modules.Migrations(two), modules.TenantRegistry(reg))
	if rep, err := m2.MigrateAll(ctx, nil, migrate.Options{}); err != nil || len(rep.Failures) != 0 || len(rep.Changes) != 4 {
		t.Fatalf("migrating to 2: %+v, %v", rep, err)
	}

	app, _, _ := newApp(t, module, routed, route, modules.Migrations(all), modules.RequiredVersion(3), modules.TenantRegistry(reg))
	behind(t, app.Start(ctx), "", "2 registered tenants are behind migration version 3", a.String()+" (at 2)", b.String()+" (at 2)")

	lying := migrate.NewMemoryRegistry()
	for _, id := range []tenancy.ID{a, b} {
		_ = lying.Put(ctx, id, migrate.Ready)
		_ = lying.SetVersion(ctx, id, module, 3)
	}
	app, m, g := newApp(t, module, routed, route, modules.Migrations(all), modules.RequiredVersion(3), modules.TenantRegistry(lying))
	if err := app.Start(ctx); err != nil {
		t.Fatalf("the registry says every tenant is current: %v", err)
	}
	t.Cleanup(func() { _ = app.Stop(ctx) })
	for _, c := range []struct {
		id tenancy.ID
		d  direct
	}{{a, d1}, {b, d2}} {
		_, err := g.CreateNode(tenancy.WithTenant(ctx, c.id), []string{label}, map[string]any{"code": "x"})
		behind(t, err, "g", "tenant "+c.id.String()+" is at migration version 2", "need 3")
		if n := c.d.count(label); n != 0 {
			t.Fatalf("a refused call wrote %d nodes on tenant %s's server", n, c.id)
		}
	}

	if ch, err := m.Migrate(ctx, a); err != nil || len(ch) != 1 {
		t.Fatalf("migrating A: %v, %v", ch, err)
	}
	if _, err := g.CreateNode(tenancy.WithTenant(ctx, a), []string{label}, map[string]any{"code": "x"}); err != nil {
		t.Fatalf("A after its migration: %v", err)
	}
	if n := d1.count(label); n != 1 {
		t.Fatalf("A's server holds %d nodes, want 1", n)
	}
	// A's migration marked A on A's server: never B.
	_, err := g.CreateNode(tenancy.WithTenant(ctx, b), []string{label}, map[string]any{"code": "x"})
	behind(t, err, "", "tenant "+b.String())
	if n := d2.count(label); n != 0 {
		t.Fatalf("B's server holds %d nodes after a refused call", n)
	}
}

// Tagged: the shared database is the one target. Behind, the app refuses
// to start naming it; migrated, it starts and serves, whatever a registry
// records for its tenants.
func TestRequiredVersionTaggedShared(t *testing.T) {
	s := testsvc.Neo4j(t)
	label, module, _ := migrationScope(t, s)
	ctx := context.Background()
	route := neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true})
	all := threeSteps(label, true)

	app, _, _ := newApp(t, module, connect(s), route, modules.Migrations(all), modules.RequiredVersion(2))
	behind(t, app.Start(ctx), "", "the shared tables are at migration version 0", "need 2")
	m, _ := startMigrator(t, module, connect(s), route, modules.Migrations(all))
	if ch, err := m.Migrate(ctx, tenancy.ID{}); err != nil || len(ch) != 3 {
		t.Fatalf("migrating the shared database: %v, %v", ch, err)
	}
	// A registry listing tenants at no version of this module does not
	// matter: they share the database, whose own history is current.
	reg := migrate.NewMemoryRegistry()
	_ = reg.Put(ctx, tenancytest.TenantA, migrate.Ready)
	app, _, g := newApp(t, module, connect(s), route, modules.Migrations(all), modules.RequiredVersion(2), modules.TenantRegistry(reg))
	if err := app.Start(ctx); err != nil {
		t.Fatalf("after the migration: %v", err)
	}
	t.Cleanup(func() { _ = app.Stop(ctx) })
	if _, err := g.CreateNode(tenancy.WithTenant(ctx, tenancytest.TenantA), []string{label}, map[string]any{"code": "x"}); err != nil {
		t.Fatal(err)
	}
}

// A tenant found current on one server is not current on another: moved
// by its resolver to a server where its database has no history, its
// next call is read again and refused before it writes there.
func TestRequiredVersionRerouted(t *testing.T) {
	reroutedStaleTenant(t, neo4j.RouteConfig{}, "")
}

// reroutedStaleTenant migrates tenant A on the first server through a
// route of cfg, starts an app requiring the version, then moves A to the
// second server: A's next call must be refused (naming route, "" for a
// start-up-style refusal naming none) before anything is written there.
func reroutedStaleTenant(t *testing.T, cfg neo4j.RouteConfig, route string) {
	t.Helper()
	s1, s2 := testsvc.Neo4j(t), testsvc.Neo4jSecond(t)
	label, module, ds := migrationScope(t, s1, s2)
	d1, d2 := ds[0], ds[1]
	ctx := context.Background()
	a := tenancytest.TenantA
	var onSecond atomic.Bool
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		if id != a {
			return routing.Credentials{}, fmt.Errorf("no server for tenant %s", id)
		}
		if onSecond.Load() {
			return credentials(s2), nil
		}
		return credentials(s1), nil
	}
	routed := neo4j.Routed(resolve, routing.Limits{TTL: time.Millisecond})
	g0 := neo4j.GraphRoute("g", cfg)
	all := threeSteps(label, false)
	reg := migrate.NewMemoryRegistry()
	_ = reg.Put(ctx, a, migrate.Ready)
	m, _ := startMigrator(t, module, routed, g0, modules.Migrations(all), modules.TenantRegistry(reg))
	if rep, err := m.MigrateAll(ctx, nil, migrate.Options{}); err != nil || len(rep.Failures) != 0 || len(rep.Changes) != 3 {
		t.Fatalf("migrating A on the first server: %+v, %v", rep, err)
	}
	app, _, g := newApp(t, module, routed, g0, modules.Migrations(all), modules.RequiredVersion(3), modules.TenantRegistry(reg))
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(ctx) })
	ctxA := tenancy.WithTenant(ctx, a)
	if _, err := g.CreateNode(ctxA, []string{label}, map[string]any{"code": "x"}); err != nil {
		t.Fatalf("A on its migrated server: %v", err)
	}
	onSecond.Store(true)
	time.Sleep(5 * time.Millisecond) // past the TTL: the next call resolves again
	_, err := g.CreateNode(ctxA, []string{label}, map[string]any{"code": "y"})
	behind(t, err, route, "tenant "+a.String()+" is at migration version 0")
	if n1, n2 := d1.count(label), d2.count(label); n1 != 1 || n2 != 0 {
		t.Fatalf("nodes: %d on the first server, %d on the second; want 1 and 0", n1, n2)
	}
}
