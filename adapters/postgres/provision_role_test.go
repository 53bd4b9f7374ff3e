package postgres_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
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
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix),
		postgres.DynamicReadRoute("adhoc", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true}),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})))
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

// TestProvisionByANonSuperuser: a managed server's provisioning user has
// CREATEROLE but is no superuser, and PostgreSQL refuses such a user any
// ALTER ROLE that names REPLICATION or BYPASSRLS, even to deny them.
// Provisioning a confined tenant works as that user: the tenant's role is
// made, confined, granted to the user, and a dynamic read runs as it. A role
// someone made beforehand under the tenant's name holding BYPASSRLS fails
// that user's provisioning (it cannot revoke the attribute) and loses the
// attribute when a superuser provisions.
func TestProvisionByANonSuperuser(t *testing.T) {
	su := superuser(t)
	ctx := context.Background()
	user := "tw_cr_" + unique()
	for _, q := range []string{
		"CREATE ROLE " + user + " LOGIN CREATEROLE",
		"GRANT CREATE ON DATABASE " + pgx.Identifier{su.Config().Database}.Sanitize() + " TO " + user,
	} {
		if _, err := su.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, q := range []string{"DROP OWNED BY " + user, "DROP ROLE " + user} {
			if _, err := su.Exec(context.Background(), q); err != nil {
				t.Logf("%s: %v", q, err)
			}
		}
	})
	u, err := url.Parse(testsvc.PostgresURL(t))
	must0(t, err)
	u.User = url.User(user)
	module := func(dsn, prefix string) *postgres.Client {
		return start(t, postgres.Module("pg", postgres.Connect(dsn), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
			postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}),
			postgres.DynamicReadRoute("adhoc", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true})))
	}
	prefix := "n" + unique() + "_"
	c := module(u.String(), prefix)
	for range 2 { // idempotent
		provision(t, c, tenancytest.TenantA)
	}
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA) })
	var super, repl, bypass, inherit bool
	must0(t, su.QueryRow(ctx, "SELECT rolsuper, rolreplication, rolbypassrls, rolinherit FROM pg_roles WHERE rolname = $1",
		postgres.RoleName(prefix, tenancytest.TenantA)).Scan(&super, &repl, &bypass, &inherit))
	if super || repl || bypass || inherit {
		t.Errorf("tenant role: superuser %v, replication %v, bypassrls %v, inherit %v", super, repl, bypass, inherit)
	}
	var dyn *postgres.DynamicRead
	start(t, postgres.Module("pg", postgres.Connect(u.String()), postgres.SchemaPrefix(prefix),
		postgres.DynamicReadRoute("adhoc", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true})), named("adhoc", &dyn))
	var who string
	must0(t, dyn.Query(tenancy.WithTenant(ctx, tenancytest.TenantA), "SELECT current_user::text", nil, func(r pgx.Rows) error {
		for r.Next() {
			if err := r.Scan(&who); err != nil {
				return err
			}
		}
		return r.Err()
	}))
	if who != postgres.RoleName(prefix, tenancytest.TenantA) {
		t.Errorf("dynamic read ran as %q, want the tenant's role", who)
	}

	// A role made beforehand under tenant B's name, holding BYPASSRLS.
	squat := postgres.RoleName(prefix, tenancytest.TenantB)
	if _, err := su.Exec(ctx, "CREATE ROLE "+squat+" NOLOGIN BYPASSRLS"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = su.Exec(context.Background(), "DROP OWNED BY "+squat+"; DROP ROLE IF EXISTS "+squat) })
	if err := c.Provision(ctx, tenancytest.TenantB); err == nil || !strings.Contains(err.Error(), "superuser") {
		t.Fatalf("a non-superuser provisioning over a BYPASSRLS role: %v, want the server's refusal", err)
	}
	byOwner := module(testsvc.PostgresURL(t), prefix)
	provision(t, byOwner, tenancytest.TenantB)
	t.Cleanup(func() { teardown(t, byOwner, tenancytest.TenantB) })
	must0(t, su.QueryRow(ctx, "SELECT rolbypassrls FROM pg_roles WHERE rolname = $1", squat).Scan(&bypass))
	if bypass {
		t.Error("a superuser's provisioning left BYPASSRLS on the tenant's role")
	}
}
