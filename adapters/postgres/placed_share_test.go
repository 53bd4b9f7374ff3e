package postgres_test

import (
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestTenantShareOfAPlacedModule: a share named after a module with
// placements is accepted at fx.New and bounds a tenant's calls at its
// placement: A's second unit of work while its first holds is refused
// with tenant_share_exceeded, and B, at another placement, is served.
func TestTenantShareOfAPlacedModule(t *testing.T) {
	run := unique()
	var tagged, namespace *postgres.Client
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(), modules.TenantShare("orders", modules.Share{Calls: 1}),
		postgres.Module("orders", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"), modules.AllowTeardown(),
			modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged}),
			postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.PerTenant("ps" + run)})),
		fx.Populate(&tenants), named("orders.tagged", &tagged), named("orders.namespace", &namespace))
	if err := app.Err(); err != nil {
		t.Fatalf("a share of a module with placements: %v", err)
	}
	startApp(t, app)
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	tenants.Place(b, "orders", tenancy.Namespace)
	for _, id := range []tenancy.ID{a, b} {
		if _, err := tenants.Provision(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = tenants.Offboard(context.Background(), id) })
	}
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- tagged.InTx(tenancy.WithTenant(context.Background(), a), func(context.Context) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	err := tagged.InTx(tenancy.WithTenant(context.Background(), a), func(context.Context) error { return nil })
	if tenancy.CodeOf(err) != tenancy.CodeTenantShareExceeded {
		t.Errorf("A's second unit while its first holds: %v, want %s", err, tenancy.CodeTenantShareExceeded)
	}
	if err := namespace.InTx(tenancy.WithTenant(context.Background(), b), func(context.Context) error { return nil }); err != nil {
		t.Errorf("B's unit at its own placement: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
