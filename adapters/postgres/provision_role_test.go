package postgres_test

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestProvisionRoleNotGrantedToSuperuser: a superuser may SET ROLE to any
// role, so provisioning does not make it a member of each tenant's reader
// role: every such grant makes the server check membership cycles over all
// the roles the user already belongs to (over a second per grant at
// 10,000 tenants). The dynamic-read tests show SET ROLE still works.
func TestProvisionRoleNotGrantedToSuperuser(t *testing.T) {
	conn := superuser(t)
	ctx := context.Background()
	prefix := "g" + unique() + "_"
	c := start(t, postgres.Module("pg", postgres.DSN(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix),
		postgres.DynamicReadRoute("adhoc", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true}),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: postgres.SchemaPerTenant("docs"), Write: postgres.SchemaPerTenant("docs")})))
	for range 2 { // idempotent
		provision(t, c, tenancytest.TenantA)
	}
	var role, member bool
	must0(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1), "+
		"EXISTS (SELECT FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid WHERE r.rolname = $1 AND m.member = (SELECT oid FROM pg_roles WHERE rolname = current_user))",
		postgres.RoleName(prefix, tenancytest.TenantA)).Scan(&role, &member))
	if !role || member {
		t.Errorf("role created: %v; superuser made a member: %v", role, member)
	}
}
