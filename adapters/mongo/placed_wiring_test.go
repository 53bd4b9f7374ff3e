package mongo_test

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestPlacementsWiringRefused: at fx.New, before anything connects, a
// module with placements is refused with tenant_placement_invalid naming
// the module (or the placement's module) and the route: a malformed
// offer, a route kind that cannot be placed, a placement without its
// server, and a route that does not reach a placement's tier.
func TestPlacementsWiringRefused(t *testing.T) {
	uri := mongo.Connect("mongodb://127.0.0.1:1")
	all := modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged})
	two := modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged})
	docs := mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("o")})
	for name, c := range map[string]struct {
		opts          []mongo.Option
		module, route string
		detail        string
	}{
		"one tier": {[]mongo.Option{uri, modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Namespace}, Default: tenancy.Namespace}), docs},
			"orders", "", "at least two"},
		"search route": {[]mongo.Option{uri, routed, all, docs, mongo.SearchRoute("find", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("f")})},
			"orders", "find", "cannot be placed"},
		"dedicated without Routed":   {[]mongo.Option{uri, all, docs}, "orders", "", "own servers"},
		"namespace without a server": {[]mongo.Option{routed, all, docs}, "orders", "", "shared server"},
		"tagged route not tenant-aware": {[]mongo.Option{uri, two, mongo.Document[order]("orders", mongo.RouteConfig{Collection: naming.PerTenant("o")})},
			"orders.tagged", "orders", "reaches none"},
		"namespace route in a shared collection": {[]mongo.Option{uri, two, mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("o")})},
			"orders.namespace", "orders", "reaches tagged"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeTenantPlacementInvalid, mongo.Module("orders", append([]mongo.Option{mongo.Database("app")}, c.opts...)...))
			if e.Module != c.module || c.route != "" && e.Route != c.route || !strings.Contains(e.Detail, c.detail) || e.Backend != "mongodb" {
				t.Fatalf("want %s/%s (%q), got %+v", c.module, c.route, c.detail, e)
			}
		})
	}
}
