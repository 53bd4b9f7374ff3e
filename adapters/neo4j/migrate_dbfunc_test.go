package neo4j_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// defaultDB names every tenant's database with a function, the server's
// default database "neo4j" (the test servers are Community, which serve
// no other): per tenant as far as the module can tell.
func defaultDB(tenancy.ID) (string, error) { return "neo4j", nil }

// A route naming its database with a function (RouteConfig.Database, no
// DatabasePrefix) gives tenants databases of their own, as DatabasePrefix
// does: RequiredVersion then needs a registry at fx.New, and the start-up
// check reads it, refusing while a registered tenant is behind.
func TestRequiredVersionDatabaseFunc(t *testing.T) {
	s := testsvc.Neo4j(t)
	label, module, _ := migrationScope(t, s)
	files := threeSteps(label, false)
	route := neo4j.GraphRoute("g", neo4j.RouteConfig{Database: defaultDB})

	e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		neo4j.Module(module, connect(s), route, neo4j.Migrations(files), neo4j.RequiredVersion(3)))
	if !strings.Contains(e.Detail, "tenants at start") || !strings.Contains(e.Fix, "TenantRegistry") {
		t.Fatalf("refusal %+v, want the registry asked for", e)
	}

	ctx := context.Background()
	reg := migrate.NewMemoryRegistry()
	for id, v := range map[tenancy.ID]int64{tenancytest.TenantA: 3, tenancytest.TenantB: 2} {
		_ = reg.Put(ctx, id, migrate.Ready)
		_ = reg.SetVersion(ctx, id, module, v)
	}
	app, _, _ := newApp(t, module, connect(s), route, neo4j.Migrations(files), neo4j.RequiredVersion(3), neo4j.TenantRegistry(reg))
	err := app.Start(ctx)
	behind(t, err, "", "1 registered tenants are behind migration version 3", tenancytest.TenantB.String()+" (at 2)")
	if strings.Contains(err.Error(), tenancytest.TenantA.String()) {
		t.Fatalf("the refusal names current tenant A: %v", err)
	}
}

// A routed tenant whose route names its database with a function, moved
// by its resolver to another server: the gate reads its version on the new
// server and database, where it has no history, and refuses the call
// before it writes, instead of serving what it found on the old server.
func TestRequiredVersionReroutedDatabaseFunc(t *testing.T) {
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
	routed := neo4j.Routed(resolve, neo4j.RoutedConfig{TTL: time.Millisecond})
	route := neo4j.GraphRoute("g", neo4j.RouteConfig{Database: defaultDB})
	all := threeSteps(label, false)
	reg := migrate.NewMemoryRegistry()
	_ = reg.Put(ctx, a, migrate.Ready)
	m, _ := startMigrator(t, module, routed, route, neo4j.Migrations(all))
	if rep, err := m.MigrateAll(ctx, nil, reg, migrate.Options{}); err != nil || len(rep.Failures) != 0 || len(rep.Changes) != 3 {
		t.Fatalf("migrating A on the first server: %+v, %v", rep, err)
	}
	app, _, g := newApp(t, module, routed, route, neo4j.Migrations(all), neo4j.RequiredVersion(3), neo4j.TenantRegistry(reg))
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
	behind(t, err, "g", "tenant "+a.String()+" is at migration version 0")
	if n1, n2 := d1.count(label), d2.count(label); n1 != 1 || n2 != 0 {
		t.Fatalf("nodes: %d on the first server, %d on the second; want 1 and 0", n1, n2)
	}
}
