package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// staticSchemaModule is a module with a tagged document route over a
// static table in static and a confined dynamic read per tenant schema.
func staticSchemaModule(t *testing.T, prefix, static, table string) fx.Option {
	return postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix), postgres.StaticSchema(static),
		modules.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(table), Write: naming.Shared(table)}),
		postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true}))
}

// sharedTableHarm runs, on the server, what tenant B can do to the shared
// table of a module whose static schema is static: A writes a row, A and
// B are provisioned, B's dynamic read counts the shared table's rows and
// B is torn down. It returns what B's read saw (its error when refused)
// and whether the shared table and A's row survived B's teardown.
func sharedTableHarm(t *testing.T, prefix, static, table string) (seen int64, readErr error, kept bool) {
	t.Helper()
	ctx := context.Background()
	su := superuser(t)
	exec(t, su, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{static}.Sanitize())
	var docs *postgres.Documents[item]
	var dyn *postgres.DynamicRead
	c := start(t, staticSchemaModule(t, prefix, static, table), &docs, named("dyn", &dyn))
	provision(t, c, tenancytest.TenantA)
	if _, err := docs.Create(ctxA, "a1", item{Name: "A's", N: 1}); err != nil {
		t.Fatal(err)
	}
	provision(t, c, tenancytest.TenantB)
	qualified := pgx.Identifier{static, table}.Sanitize()
	readErr = dyn.Query(ctxB, "SELECT count(*) FROM "+qualified, nil, func(r pgx.Rows) error {
		for r.Next() {
			if err := r.Scan(&seen); err != nil {
				return err
			}
		}
		return r.Err()
	})
	teardown(t, c, tenancytest.TenantB)
	var rows int64
	err := su.QueryRow(ctx, "SELECT count(*) FROM "+qualified+" WHERE tenant_id = $1", tenancytest.TenantA.String()).Scan(&rows)
	kept = err == nil && rows == 1
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA) })
	return seen, readErr, kept
}

// TestStaticSchemaInTenantSpace: a static schema named as tenant B's
// schema would be B's: B's provisioning grants B's confined reader role
// SELECT on the shared tagged table, so B reads A's rows, and B's teardown
// drops the table for every tenant. fx.New refuses it (under this
// module's prefix or any other), so no app gets to run it; when the
// refusal is missing the test runs the wiring on the server and reports
// the harm. The same module with a static schema outside the tenant
// space, on the server: B's role is refused the shared table, and B's
// teardown leaves it and A's row.
func TestStaticSchemaInTenantSpace(t *testing.T) {
	run := unique()
	prefix, table := "st"+run+"_", "items_"+run
	b := postgres.SchemaName(prefix, tenancytest.TenantB)
	if err := fx.New(fx.NopLogger, staticSchemaModule(t, prefix, b, table)).Err(); err == nil {
		seen, readErr, kept := sharedTableHarm(t, prefix, b, table)
		t.Fatalf("static schema %s (tenant B's) was wired: on the server B's dynamic read of the shared table saw %d rows (error %v), "+
			"and the shared table with A's row survived B's teardown: %v", b, seen, readErr, kept)
	}
	e := tenancytest.RequireRefused(t, tenancy.CodeStaticNameInTenantSpace, staticSchemaModule(t, prefix, b, table))
	if e.Module != "pg" || e.Backend != "postgres" || !strings.Contains(e.Detail, b) || !strings.Contains(e.Fix, "postgres.StaticSchema") {
		t.Errorf("refusal %+v", e)
	}
	tenancytest.RequireRefused(t, tenancy.CodeStaticNameInTenantSpace,
		staticSchemaModule(t, prefix, postgres.SchemaName("other_", tenancytest.TenantB), table))

	seen, readErr, kept := sharedTableHarm(t, prefix, "s"+run, table)
	var pe *pgconn.PgError
	if !errors.As(readErr, &pe) || pe.Code != "42501" || seen != 0 {
		t.Errorf("B's dynamic read of the shared table: %d rows, %v; want permission denied (42501)", seen, readErr)
	}
	if !kept {
		t.Error("B's teardown removed the shared table or A's row")
	}
}

// A registry kept in a schema of the tenant shape would be dropped by
// that tenant's teardown and readable by its confined role.
func TestRegistrySchemaInTenantSpace(t *testing.T) {
	_, err := postgres.NewRegistry(nil, postgres.SchemaName("tenant_", tenancytest.TenantB))
	if tenancy.CodeOf(err) != tenancy.CodeStaticNameInTenantSpace {
		t.Fatalf("NewRegistry in tenant B's schema: %v", err)
	}
	if _, err := postgres.NewRegistry(nil, "tenantwire"); err != nil {
		t.Fatal(err)
	}
}

// The migration history and the registry tables are the framework's: a
// route naming one (static or per tenant, in any role) is refused at
// fx.New, so no route can write or read what the migration checks trust.
func TestFrameworkTablesReserved(t *testing.T) {
	for name, opt := range map[string]postgres.Option{
		"history as documents": postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true,
			Read: naming.Shared("tenantwire_migrations"), Write: naming.Shared("tenantwire_migrations")}),
		"per-tenant history": postgres.Document[item]("docs", postgres.DocumentConfig{
			Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs"), History: naming.PerTenant("tenantwire_migrations")}),
		"registry as counter": postgres.CounterRoute("docs", postgres.CounterConfig{TenantAware: true, Table: naming.Shared("tenantwire_tenants")}),
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeReservedName,
				postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), opt))
			if e.Route != "docs" || !strings.Contains(e.Fix, "tenantwire") {
				t.Errorf("refusal %+v", e)
			}
		})
	}
}
