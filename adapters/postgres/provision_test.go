package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestProvisionConcurrentAndIdempotent provisions one tenant from many
// goroutines at once, then again: every call succeeds.
func TestProvisionConcurrentAndIdempotent(t *testing.T) {
	run := unique()
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"), modules.AllowTeardown(),
		postgres.Document[item]("orders", postgres.DocumentConfig{
			Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs"), History: naming.PerTenant("hist"),
		})), &d)
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA) })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := c.Provision(context.Background(), tenancytest.TenantA); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	provision(t, c, tenancytest.TenantA)
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := d.Create(ctx, "x", item{}); err != nil {
		t.Fatal(err)
	}
	// Teardown drops the schema; provisioning again starts empty.
	teardown(t, c, tenancytest.TenantA)
	provision(t, c, tenancytest.TenantA)
	if n, err := d.Count(ctx, document.Query{}); err != nil || n != 0 {
		t.Errorf("after teardown: %d %v", n, err)
	}
	if err := c.Provision(context.Background(), tenancy.ID{}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Errorf("zero tenant: %v", err)
	}
}

func TestTeardownNeedsOptIn(t *testing.T) {
	c := start(t, postgres.Module("pg", postgres.Connect(nowhere), perTenantDocs(naming.Name{})))
	if err := c.Teardown(context.Background(), tenancytest.TenantA); !errors.Is(err, migrate.ErrTeardownDisabled) {
		t.Errorf("teardown without opt-in: %v", err)
	}
}
