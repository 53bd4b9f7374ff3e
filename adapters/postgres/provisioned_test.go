package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func requireNotProvisioned(t *testing.T, op string, err error) {
	t.Helper()
	var e *tenancy.Error
	if !errors.As(err, &e) || e.Code != tenancy.CodeTenantNotProvisioned {
		t.Fatalf("%s on an unprovisioned tenant: %v, want tenant_not_provisioned", op, err)
	}
	if e.Module != "pg" || e.Backend != "postgres" || e.Route == "" || !strings.Contains(e.Fix, "Provision(ctx, tenant)") ||
		!strings.Contains(e.Detail, "does not exist") {
		t.Fatalf("%s: error lacks its fields: %+v", op, e)
	}
}

// A call for a tenant nobody provisioned, on a schema-per-tenant route, is
// a coded error naming the fix, not SQLSTATE 3F000/42P01; provisioning
// ends it, and a teardown brings it back.
func TestUnprovisionedTenantIsCoded(t *testing.T) {
	run := unique()
	var (
		d *postgres.Documents[item]
		k *postgres.Counter
	)
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"), modules.AllowTeardown(),
		perTenantDocs(naming.Name{}),
		postgres.CounterRoute("hits", postgres.CounterConfig{Table: naming.PerTenant("hits")}),
	), &d, fx.Annotate(&k, fx.ParamTags(`name:"hits"`)))
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)

	_, err := d.Get(ctx, "x")
	requireNotProvisioned(t, "Get", err)
	_, err = d.Create(ctx, "x", item{})
	requireNotProvisioned(t, "Create", err)
	_, err = d.List(ctx, document.Query{})
	requireNotProvisioned(t, "List", err)
	_, err = d.Count(ctx, document.Query{})
	requireNotProvisioned(t, "Count", err)
	requireNotProvisioned(t, "Delete", d.Delete(ctx, "x"))
	_, err = k.Add(ctx, "n", 1)
	requireNotProvisioned(t, "Counter.Add", err)

	provision(t, c, tenancytest.TenantA)
	if _, err := d.Create(ctx, "x", item{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	// Tenant B shares nothing with A: still not provisioned.
	_, err = d.Get(tenancy.WithTenant(context.Background(), tenancytest.TenantB), "x")
	requireNotProvisioned(t, "Get as B", err)

	teardown(t, c, tenancytest.TenantA)
	_, err = d.Get(ctx, "x")
	requireNotProvisioned(t, "Get after teardown", err)
}

// A static table missing on a plain client is the deployment's fault, not
// a tenant's: the driver's error stays.
func TestMissingStaticTableKeepsTheDriverError(t *testing.T) {
	run := unique()
	var d *postgres.Documents[item]
	start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.Document[item]("orders", postgres.DocumentConfig{
			TenantAware: true, Read: naming.Shared("docs" + run), Write: naming.Shared("docs" + run),
		})), &d)
	_, err := d.Get(tenancy.WithTenant(context.Background(), tenancytest.TenantA), "x")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42P01" || tenancy.CodeOf(err) != "" {
		t.Fatalf("missing static table: %v, want the driver's 42P01", err)
	}
}
