package redis_test

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Most tenants share the keyspace; a premium one has a server of its
// own. fx.New checks each placement's module and connects nothing; a
// move (Tenants.Move) then needs the servers.
func ExamplePlacements() {
	premium := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	ownServer := func(_ context.Context, t tenancy.ID) (routing.Credentials, error) {
		if t != premium {
			return routing.Credentials{}, fmt.Errorf("tenant %s has no server of its own", t)
		}
		return routing.Credentials{Endpoint: "premium-redis:6379"}, nil
	}
	shared := goredis.NewUniversalClient(&goredis.UniversalOptions{Addrs: []string{"shared-redis:6379"}}) // dials on first use
	defer shared.Close()
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		redis.Module("cache",
			redis.Use(shared),
			redis.Routed(ownServer, redis.RoutedConfig{}),
			modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}),
			redis.CacheRoute("sessions", redis.RouteConfig{TenantAware: true, Namespace: naming.PerTenant("sess-")}),
		),
		fx.Populate(&tenants),
		fx.Invoke(fx.Annotate(func(*redis.Cache) {}, fx.ParamTags(`name:"sessions"`))),
	)
	fmt.Println("wiring:", app.Err())
	tenants.Place(premium, "cache", tenancy.Dedicated)
	tenants.SetPlan(premium, tenancy.Dedicated) // never served from the shared keyspace
	fmt.Println("premium at:", tenants.Placement(premium).At["cache"])
	// Output:
	// wiring: <nil>
	// premium at: dedicated
}
