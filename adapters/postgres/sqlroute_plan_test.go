package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestSQLRoutePlanListsTheGrants: the provisioning dry run of a module
// with a SQL route lists the role's search path and grants, for a new
// tenant and for one provisioned before the module had the route (its
// role without them); once provisioned, nothing.
func TestSQLRoutePlanListsTheGrants(t *testing.T) {
	prefix := "tw" + unique() + "_"
	c := start(t, sqlModule(t, direct, prefix))
	a := tenancytest.TenantA
	t.Cleanup(func() { teardown(t, c, a) })
	ctx := context.Background()
	plan := func() []string {
		t.Helper()
		rep, err := c.ProvisionAll(ctx, []tenancy.ID{a}, migrate.Options{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		return testsvc.Plan(rep)[a]
	}
	grants := "grants of role " + postgres.RoleName(prefix, a)
	has := func(p []string) bool {
		for _, l := range p {
			if strings.HasPrefix(l, grants) {
				return true
			}
		}
		return false
	}
	if p := plan(); !has(p) {
		t.Fatalf("a new tenant's plan %q does not list the grants", p)
	}
	provision(t, c, a)
	if p := plan(); has(p) {
		t.Fatalf("after provisioning: %q", p)
	}
	exec(t, superuser(t), "ALTER ROLE "+pgx.Identifier{postgres.RoleName(prefix, a)}.Sanitize()+" RESET search_path")
	if p := plan(); !has(p) {
		t.Fatalf("a role without the route's search path: plan %q", p)
	}
}
