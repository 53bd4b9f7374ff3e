package redis_test

import (
	"context"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestPlacementsWiringRefused: at fx.New, before anything connects, a
// module with placements is refused with tenant_placement_invalid naming
// the module (or the placement's module) and the route: a malformed
// offer, a route kind that cannot be placed, a placement without its
// server, and a route that does not reach a placement's tier.
func TestPlacementsWiringRefused(t *testing.T) {
	shared := redis.Connect(&goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}})
	routed := redis.Routed(func(context.Context, tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: "127.0.0.1:1"}, nil
	}, redis.RoutedConfig{})
	all := modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged})
	two := modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged})
	cache := redis.CacheRoute("c", redis.RouteConfig{TenantAware: true, Namespace: naming.PerTenant("c-")})
	for name, c := range map[string]struct {
		opts          []redis.Option
		module, route string
		detail        string
	}{
		"default not offered": {[]redis.Option{shared, modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Dedicated}), cache},
			"cache", "", "default"},
		"lock route":                 {[]redis.Option{shared, routed, all, cache, redis.LockRoute("l", redis.RouteConfig{TenantAware: true, Namespace: naming.PerTenant("l-")})}, "cache", "l", "cannot be placed"},
		"dedicated without Routed":   {[]redis.Option{shared, all, cache}, "cache", "", "own servers"},
		"namespace without a server": {[]redis.Option{routed, all, cache}, "cache", "", "shared server"},
		"tagged route not tenant-aware": {[]redis.Option{shared, two, redis.CacheRoute("c", redis.RouteConfig{Namespace: naming.PerTenant("c-")})},
			"cache.tagged", "c", "reaches none"},
		"namespace route without a namespace": {[]redis.Option{shared, two, redis.CacheRoute("c", redis.RouteConfig{TenantAware: true})},
			"cache.namespace", "c", "reaches tagged"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeTenantPlacementInvalid, redis.Module("cache", c.opts...))
			if e.Module != c.module || c.route != "" && e.Route != c.route || !strings.Contains(e.Detail, c.detail) || e.Backend != "redis" {
				t.Fatalf("want %s/%s (%q), got %+v", c.module, c.route, c.detail, e)
			}
		})
	}
}
