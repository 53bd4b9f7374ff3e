package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

// refusals is every coded error err joins.
func refusals(err error) []*tenancy.Error {
	var out []*tenancy.Error
	var walk func(error)
	walk = func(err error) {
		var e *tenancy.Error
		if errors.As(err, &e) && e == err {
			out = append(out, e)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// TestPlacementsWiringRefused: at fx.New, before anything connects, a
// module with placements is refused with a coded error naming the module
// (or the placement's module) and the route: a malformed offer, a route
// kind that cannot be placed, a placement without its server, a route
// that does not reach a placement's tier, a relay that would drain a
// placement's outbox with no tenant bound, and a floor above the weakest
// placement offered.
func TestPlacementsWiringRefused(t *testing.T) {
	dsn := "postgres://u@127.0.0.1:1/db"
	resolve := resolverOf(nil)
	all := modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}
	docs := postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.PerTenant("docs")})
	for name, c := range map[string]struct {
		opts          []postgres.Option
		code          tenancy.Code
		module, route string
		detail        string
	}{
		"one tier": {[]postgres.Option{postgres.Connect(dsn), modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Namespace}, Default: tenancy.Namespace}), docs},
			tenancy.CodeTenantPlacementInvalid, "orders", "", "at least two"},
		"default not offered": {[]postgres.Option{postgres.Connect(dsn), modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Dedicated}), docs},
			tenancy.CodeTenantPlacementInvalid, "orders", "", "default"},
		"search route": {[]postgres.Option{postgres.Connect(dsn), postgres.Routed(resolve, postgres.RoutedConfig{}), modules.Placements(all), docs,
			postgres.SearchRoute("find", postgres.SearchConfig{TenantAware: true, Read: naming.PerTenant("find")})},
			tenancy.CodeTenantPlacementInvalid, "orders", "find", "cannot be placed"},
		"dedicated without Routed": {[]postgres.Option{postgres.Connect(dsn), modules.Placements(all), docs},
			tenancy.CodeTenantPlacementInvalid, "orders", "", "own databases"},
		"namespace without a server": {[]postgres.Option{postgres.Routed(resolve, postgres.RoutedConfig{}), modules.Placements(all), docs},
			tenancy.CodeTenantPlacementInvalid, "orders", "", "shared server"},
		"tagged route not tenant-aware": {[]postgres.Option{postgres.Connect(dsn), modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged}),
			postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs")})},
			tenancy.CodeTenantPlacementInvalid, "orders.tagged", "docs", "reaches none"},
		"namespace route in shared tables": {[]postgres.Option{postgres.Connect(dsn), modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged}),
			postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("docs")})},
			tenancy.CodeTenantPlacementInvalid, "orders.namespace", "docs", "reaches tagged"},
		"tenant-global relay": {[]postgres.Option{postgres.Connect(dsn), modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged}), docs,
			postgres.OutboxRoute("events", postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("events")}),
			postgres.Relay("events", postgres.RelayConfig{Destination: outbox.DestinationFunc(func(context.Context, outbox.Message) error { return nil })})},
			tenancy.CodeTenantGlobalRequired, "orders.tagged", "events", ""},
		"floor above the weakest": {[]postgres.Option{postgres.Connect(dsn), modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Namespace}),
			modules.RequiredIsolation(tenancy.Namespace), docs},
			tenancy.ValidationFailed("postgres"), "orders.tagged", "docs", ""},
	} {
		t.Run(name, func(t *testing.T) {
			app := fx.New(fx.NopLogger, postgres.Module("orders", c.opts...))
			err := app.Err()
			for _, e := range refusals(err) {
				if e.Code == c.code && e.Module == c.module && (c.route == "" || e.Route == c.route) && strings.Contains(e.Detail, c.detail) && e.Fix != "" && e.Backend == "postgres" {
					return
				}
			}
			t.Fatalf("want %s on %s/%s (%q), got: %v", c.code, c.module, c.route, c.detail, err)
		})
	}
}
