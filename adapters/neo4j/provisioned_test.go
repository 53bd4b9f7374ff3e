package neo4j_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// requireNotProvisioned fails t unless err is tenant_not_provisioned on
// route "g" naming the tenant and the server's DatabaseNotFound, with a
// fix containing fix.
func requireNotProvisioned(t *testing.T, err error, tenant tenancy.ID, fix string) {
	t.Helper()
	e := tenancytest.RequireCode(t, err, tenancy.CodeTenantNotProvisioned, "neo4j", "probe", "g", tenant.String(), "does not exist", "DatabaseNotFound")
	if !strings.Contains(e.Fix, fix) {
		t.Fatalf("fix %q does not say %q", e.Fix, fix)
	}
}

// TestMissingDatabaseIsNotProvisioned: a call for a tenant whose own
// database does not exist on the real server (a per-tenant database never
// provisioned; a routed tenant whose credentials name a database the
// server lacks) is refused with tenant_not_provisioned, from the server's
// DatabaseNotFound: also under RequiredVersion, where the version read is
// what meets the missing database, so the tenant is never reported behind.
// Offboarding such a routed tenant succeeds: there is nothing to remove.
// A module database that does not exist is the deployment's fault and
// keeps the driver's error.
func TestMissingDatabaseIsNotProvisioned(t *testing.T) {
	s := testsvc.Neo4j(t)
	ctx := context.Background()
	fresh := tenancytest.FreshTenant(t)
	ctxT := tenancy.WithTenant(ctx, fresh)
	label := uniqueLabel(t)
	prefix := "twnp" + fresh.Hex()[:6]
	provision := "Provision(ctx, tenant) on the module's *migrate.Runner"

	t.Run("per-tenant database", func(t *testing.T) {
		g := graph(t, "g", connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.PerTenant(prefix)}))
		_, err := g.CreateNode(ctxT, []string{label}, nil)
		requireNotProvisioned(t, err, fresh, provision)
		_, err = g.GetNode(ctxT, "4:x:1")
		requireNotProvisioned(t, err, fresh, provision)
	})
	t.Run("per-tenant database, RequiredVersion", func(t *testing.T) {
		_, module, _ := migrationScope(t, s)
		app, _, g := newApp(t, module, connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.PerTenant(prefix)}),
			modules.Migrations(threeSteps(label, false)), modules.RequiredVersion(3), modules.TenantRegistry(migrate.NewMemoryRegistry()))
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = app.Stop(ctx) })
		_, err := g.CreateNode(ctxT, []string{label}, nil)
		e := tenancytest.RequireCode(t, err, tenancy.CodeTenantNotProvisioned, "neo4j", module, "g", fresh.String(), "DatabaseNotFound")
		if !strings.Contains(e.Fix, provision) {
			t.Fatalf("fix %q does not say to provision", e.Fix)
		}
	})
	t.Run("routed", func(t *testing.T) {
		missing := "twnp" + fresh.Hex()[:12]
		resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
			c := credentials(s)
			if id == fresh {
				c.Params = map[string]string{"database": missing}
			}
			return c, nil
		}
		g := graph(t, "g", neo4j.Routed(resolve, routing.Limits{}), neo4j.GraphRoute("g", neo4j.RouteConfig{}))
		for range 2 { // the failed driver is discarded: the next call meets the server again
			_, err := g.CreateNode(ctxT, []string{label}, nil)
			requireNotProvisioned(t, err, fresh, "create the tenant's database")
		}
		// Offboarding it finds nothing to remove: a database that does not
		// exist holds nothing.
		tenants, _ := offboardApp(t, neo4j.Routed(resolve, routing.Limits{}), modules.AllowTeardown(), neo4j.GraphRoute("g", neo4j.RouteConfig{}))
		if _, err := tenants.Offboard(ctx, fresh); err != nil {
			t.Fatalf("offboarding a routed tenant without a database: %v", err)
		}
		// A tenant whose database exists is served by the same module.
		other := tenancytest.FreshTenant(t)
		d := directTo(t, s)
		t.Cleanup(func() { d.removeLabel(label) })
		if _, err := g.CreateNode(tenancy.WithTenant(ctx, other), []string{label}, nil); err != nil {
			t.Fatalf("a tenant whose database exists: %v", err)
		}
	})
	t.Run("module database", func(t *testing.T) {
		g := graph(t, "g", connect(s), neo4j.Database(prefix+"module"), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true}))
		_, err := g.CreateNode(ctxT, []string{label}, nil)
		var te *tenancy.Error
		if err == nil || errors.As(err, &te) || !strings.Contains(err.Error(), "DatabaseNotFound") {
			t.Fatalf("a missing module database: %v, want the driver's DatabaseNotFound, not a coded refusal", err)
		}
	})
}
