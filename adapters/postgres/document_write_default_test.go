package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A document route with only Read set writes to Read, as memory's does:
// the wiring names the relation in both roles (so the route reaches
// namespace on a per-tenant Read), provisioning creates the table, and
// each tenant writes and reads its own rows and nothing of the other's.
func TestDocumentWriteDefaultsToRead(t *testing.T) {
	run := unique()
	var (
		d    *postgres.Documents[item]
		live modules.Live
	)
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"), modules.AllowTeardown(),
		modules.RequiredIsolation(tenancy.Namespace),
		postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.PerTenant("docs")})),
		&d, &live)
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA, tenancytest.TenantB) })

	var roles []string
	for _, w := range live.Wirings {
		for _, r := range w.Module.Routes {
			for _, rel := range r.Relations {
				if !rel.PerTenant || rel.Name != "docs" {
					t.Errorf("relation %+v, want the per-tenant docs table", rel)
				}
				roles = append(roles, rel.Role)
			}
		}
	}
	if strings.Join(roles, ",") != "read,write" {
		t.Errorf("relations in roles %v, want read,write", roles)
	}
	if rows := live.Matrix().Rows; len(rows) != 1 || rows[0].Reached != tenancy.Namespace || rows[0].Verdict != floors.VerdictOK {
		t.Errorf("matrix %+v, want one namespace row", rows)
	}

	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	_, err := d.Create(ctxA, "before", item{Name: "a"})
	requireNotProvisioned(t, "Create", err)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	if _, err := d.Create(ctxA, "o-1", item{Name: "a", N: 1}); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Get(ctxA, "o-1"); err != nil || got.Value.Name != "a" {
		t.Fatalf("A reads its own: %+v %v", got, err)
	}
	tenancytest.Boundary(t, docProbe(t, d))
}

// Read is still required: a zero config fails closed at fx.New, and the
// fix names the field.
func TestDocumentNeedsRead(t *testing.T) {
	e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, postgres.Module("pg", postgres.Connect(nowhere),
		postgres.Document[item]("orders", postgres.DocumentConfig{TenantAware: true})))
	if e.Route != "orders" || !strings.Contains(e.Fix, "set postgres.DocumentConfig.Read") {
		t.Errorf("refusal %+v", e)
	}
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, postgres.Module("pg", postgres.Connect(nowhere),
		postgres.Document[item]("orders", postgres.DocumentConfig{Write: naming.Shared("docs")})))
}
