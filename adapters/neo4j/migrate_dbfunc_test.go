package neo4j_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// defaultDB names every tenant's database with a function, the server's
// default database "neo4j" (the test servers are Community, which serve
// no other): per tenant as far as the module can tell.
func defaultDB(tenancy.ID) (string, error) { return "neo4j", nil }

// A route naming its database with a function (RouteConfig.Database, a
// naming.Func) gives tenants databases of their own, as naming.PerTenant
// does: RequiredVersion then needs a registry at fx.New, and the start-up
// check reads it, refusing while a registered tenant is behind.
func TestRequiredVersionDatabaseFunc(t *testing.T) {
	s := testsvc.Neo4j(t)
	label, module, _ := migrationScope(t, s)
	files := threeSteps(label, false)
	route := neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.Func(defaultDB)})

	e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		neo4j.Module(module, connect(s), route, modules.Migrations(files), modules.RequiredVersion(3)))
	if !strings.Contains(e.Detail, "tenants at start") || !strings.Contains(e.Fix, "TenantRegistry") {
		t.Fatalf("refusal %+v, want the registry asked for", e)
	}

	ctx := context.Background()
	reg := migrate.NewMemoryRegistry()
	for id, v := range map[tenancy.ID]int64{tenancytest.TenantA: 3, tenancytest.TenantB: 2} {
		_ = reg.Put(ctx, id, migrate.Ready)
		_ = reg.SetVersion(ctx, id, module, v)
	}
	app, _, _ := newApp(t, module, connect(s), route, modules.Migrations(files), modules.RequiredVersion(3), modules.TenantRegistry(reg))
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
	reroutedStaleTenant(t, neo4j.RouteConfig{Database: naming.Func(defaultDB)}, "g")
}
