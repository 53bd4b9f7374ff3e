package mongo_test

import (
	"context"
	"fmt"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Most tenants share a collection; a growing one gets a collection of its
// own, a premium one a server of its own. fx.New checks each placement's
// module and connects nothing; a move (Tenants.Move) then needs the
// servers.
func ExamplePlacements() {
	type Order struct {
		Total float64 `json:"total"`
	}
	premium := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	growing := tenancy.MustParseID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
	ownServer := func(_ context.Context, t tenancy.ID) (routing.Credentials, error) {
		if t != premium {
			return routing.Credentials{}, fmt.Errorf("tenant %s has no server of its own", t)
		}
		return routing.Credentials{Endpoint: "mongodb://premium-mongo:27017"}, nil
	}
	var (
		orders  *mongo.Documents[Order]
		tenants *modules.Tenants
	)
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		mongo.Module("shop",
			mongo.Connect("mongodb://shared-mongo:27017"), mongo.Database("shop"),
			mongo.Routed(ownServer, mongo.RoutedConfig{}),
			modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}),
			mongo.Document[Order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("orders")}),
		),
		fx.Populate(&orders, &tenants),
	)
	fmt.Println("wiring:", app.Err())
	tenants.Place(growing, "shop", tenancy.Namespace) // its own collection, orders.<hex>
	tenants.Place(premium, "shop", tenancy.Dedicated)
	tenants.SetPlan(premium, tenancy.Dedicated)
	for _, t := range []tenancy.ID{growing, premium} {
		fmt.Println(t, "at", tenants.Placement(t).At["shop"])
	}
	// Output:
	// wiring: <nil>
	// 3f2504e0-4f89-41d3-9a0c-0305e82c3301 at namespace
	// 7c9e6679-7425-40de-944b-e07fc1f90ae7 at dedicated
}
