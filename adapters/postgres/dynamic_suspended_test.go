package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestDynamicReadOfASuspendedTenantRunsNothing: a suspended tenant's
// dynamic read is refused with tenant_suspended before its compiled text
// runs: the text would reach its rows (scan), and it never does; resumed,
// the same read runs.
func TestDynamicReadOfASuspendedTenantRunsNothing(t *testing.T) {
	run := unique()
	var dyn *postgres.DynamicRead
	var tenants *modules.Tenants
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"), modules.AllowTeardown(),
		postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true})),
		modules.Lifecycle(), named("dyn", &dyn), &tenants)
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA) })
	provision(t, c, tenancytest.TenantA)
	ran := 0
	read := func() error {
		return dyn.Query(ctxA, "SELECT 1", nil, func(r pgx.Rows) error {
			ran++
			for r.Next() {
			}
			return r.Err()
		})
	}
	tenants.Suspend(tenancytest.TenantA)
	requirePG(t, read(), tenancy.CodeTenantSuspended, "dyn")
	if ran != 0 {
		t.Fatalf("a suspended tenant's compiled text ran (%d rows handed to scan)", ran)
	}
	tenants.Resume(tenancytest.TenantA)
	if err := read(); err != nil || ran != 1 {
		t.Fatalf("resumed: %v, scan ran %d times; want nil and 1", err, ran)
	}
}
