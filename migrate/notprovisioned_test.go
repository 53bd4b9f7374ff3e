package migrate_test

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// NotProvisioned words every backend's tenant_not_provisioned alike: the
// tenant (or "the bound tenant"), the missing container and the server's
// word, whether the call touched anything, and a fix naming the module's
// runner unless the backend gives its own.
func TestNotProvisioned(t *testing.T) {
	a := tenancytest.TenantA
	err := migrate.NotProvisioned(migrate.Unprovisioned{Module: "graph", Backend: "neo4j", Route: "g", Tenant: a,
		What: "database t_a", Cause: "Neo.ClientError.Database.DatabaseNotFound: gone", Untouched: true, Creates: "its database"})
	e := tenancytest.RequireCode(t, err, "tenant_not_provisioned", "neo4j", "graph", "g",
		"tenant "+a.String()+"'s database t_a does not exist (Neo.ClientError.Database.DatabaseNotFound: gone): it was never provisioned, or was torn down; nothing was read or written")
	for _, want := range []string{"Provision(ctx, tenant)", `*migrate.Runner (name:"graph")`, "(its database)", "ProvisionAll"} {
		if !strings.Contains(e.Fix, want) {
			t.Fatalf("fix %q does not say %q", e.Fix, want)
		}
	}
	err = migrate.NotProvisioned(migrate.Unprovisioned{Module: "ev", Backend: "kafka", Route: "orders", What: "topic orders.x", Fix: "create it"})
	e = tenancytest.RequireCode(t, err, "tenant_not_provisioned", "kafka", "ev", "orders",
		"the bound tenant's topic orders.x does not exist: it was never provisioned, or was torn down")
	if strings.Contains(e.Detail, "nothing was read") || e.Fix != "create it" {
		t.Fatalf("detail %q, fix %q: want no claim the call touched nothing, and the backend's own fix", e.Detail, e.Fix)
	}
}
