package postgres_test

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Most tenants share a table; a premium tenant gets its own database, and
// a growing one is moved to its own schema online. It needs the test
// server (TENANTWIRE_PG_URL, and a database the premium tenant owns), so
// it has no Output line: `go test` compiles it and does not run it.
func ExamplePlacements() {
	type Order struct {
		Total float64 `json:"total"`
	}
	premium := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	growing := tenancy.MustParseID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
	ownDatabase := func(_ context.Context, t tenancy.ID) (routing.Credentials, error) {
		if t != premium {
			return routing.Credentials{}, fmt.Errorf("tenant %s has no database of its own", t)
		}
		return routing.Credentials{Endpoint: os.Getenv("TENANTWIRE_PG_URL"), Params: map[string]string{"database": "t_premium"}}, nil
	}
	var (
		orders  *postgres.Documents[Order]
		tenants *modules.Tenants
	)
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		postgres.Module("shop",
			postgres.Connect(os.Getenv("TENANTWIRE_PG_URL")),
			postgres.Routed(ownDatabase, postgres.RoutedConfig{}),
			modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}),
			postgres.Document[Order]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.PerTenant("orders")}),
		),
		fx.Populate(&orders, &tenants),
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = app.Stop(ctx) }()

	tenants.Place(premium, "shop", tenancy.Dedicated)
	tenants.SetPlan(premium, tenancy.Dedicated) // never served from a shared table
	for _, t := range []tenancy.ID{premium, growing} {
		if _, err := tenants.Provision(ctx, t); err != nil { // each at its placement
			fmt.Println(err)
			return
		}
		if _, err := orders.Create(tenancy.WithTenant(ctx, t), "o1", Order{Total: 9.5}); err != nil {
			fmt.Println(err)
			return
		}
	}
	// The growing tenant, from the shared table to its own schema: reads
	// served throughout, writes fenced (tenant_moving) while it is copied.
	rep, err := tenants.Move(ctx, growing, "shop", tenancy.Namespace, modules.MoveOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("moved %d records, writes fenced %v\n", rep.Records, rep.Fenced)
	if _, err := tenants.CleanupMove(ctx, growing, "shop", tenancy.Tagged); err != nil { // the old copy, erased and checked
		fmt.Println(err)
	}
}
