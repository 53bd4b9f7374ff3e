package redis

import (
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// inShared is rc as the tagged placement of a module with Placements
// declares it: without its namespace, in the shared keyspace; rc itself
// everywhere else.
func (cfg *config) inShared(rc RouteConfig) RouteConfig {
	if cfg.placed != nil && cfg.placed.At == tenancy.Tagged && rc.Namespace.PerTenant() {
		rc.Namespace = naming.Name{}
	}
	return rc
}

// checkPlaced refuses a route of a placement's module that does not reach
// the placement's tier.
func (cfg *config) checkPlaced(module string, r *routeSpec) []error {
	if cfg.placed == nil || cfg.sources == 0 {
		return nil // a placement without its server is refused already
	}
	return modules.PlacedTier(rules.Name, module, r.name, cfg.placed, rules.Decide(r.floorsRoute(cfg.routed != nil)).Reached,
		"declare the route tenant-aware, its Namespace naming.PerTenant (tagged: the shared keyspace; namespace: the tenant's own; dedicated: the tenant's own server)")
}

// placedKinds are the route kinds a module with placements can place, and
// how each provides its route object.
var placedKinds = map[string]func(module, route string, o modules.Offer, subs map[tenancy.Tier]string) fx.Option{
	string(kindCache): func(module, route string, o modules.Offer, subs map[tenancy.Tier]string) fx.Option {
		return modules.ProvidePlaced(rules.Name, module, route, o, subs, false, func(p *modules.PlacedRoute[*Cache]) *Cache { return &Cache{placed: p} })
	},
	string(kindCounter): func(module, route string, o modules.Offer, subs map[tenancy.Tier]string) fx.Option {
		return modules.ProvidePlaced(rules.Name, module, route, o, subs, false, func(p *modules.PlacedRoute[*Counter]) *Counter { return &Counter{placed: p} })
	},
}

// placedModule is Module for a module with modules.Placements, which
// makes it offer each tier of parent.Offer to its tenants, each
// tenant served at the one its record names (Tenants.Place, or the store
// LifecycleConfig.Placed reads; the offer's Default without a record):
//
//   - tagged: the shared keyspace, every key carrying its tenant; each
//     route must be tenant-aware (its Namespace is not used there);
//   - namespace: the tenant's own key namespace, as the route's
//     Namespace (naming.PerTenant) names it;
//   - dedicated: the tenant's own server, through Routed.
//
// The module is then one module per placement, named "<name>.<tier>",
// each checked at fx.New as a module of its own, and its route objects
// are provided once, under the route names, serving each call from the
// tenant's placement. Cache and counter routes can be placed; see
// docs/tiered-tenancy.md.
func placedModule(name string, opts []Option, parent *config, errs []error) fx.Option {
	var unplaced []modules.PlacedRefusal
	var provide []func(modules.Offer, map[tenancy.Tier]string) fx.Option
	for _, r := range parent.routes {
		p := placedKinds[string(r.kind)]
		if p == nil {
			unplaced = append(unplaced, modules.UnplacedKind(r.name, string(r.kind), "cache and counter"))
			continue
		}
		provide = append(provide, func(o modules.Offer, subs map[tenancy.Tier]string) fx.Option { return p(name, r.name, o, subs) })
	}
	if len(parent.workers) > 0 {
		unplaced = append(unplaced, modules.PlacedRefusal{Detail: "workers cannot drain a module with placements yet", Fix: "put the stream and its worker in a module of their own"})
	}
	return modules.PlacedModule(modules.PlacedSpec{Backend: rules.Name, Module: name, Offer: *parent.Offer, Problems: errs, Unplaced: unplaced,
		Shared: parent.client != nil || parent.connect != nil || parent.FromGraph, Routed: parent.routed != nil, Own: "servers",
		SharedFix: "add redis.Connect(opts), redis.Use(client) or modules.FromGraph() to the module", RoutedFix: "add redis.Routed(resolver, config) to the module",
		Build: func(at modules.Placement, problems []error) fx.Option {
			// placed is set first: the routes' options read it (inShared).
			cfg := &config{placed: &at, errs: problems}
			_ = modules.Configure(rules, name, cfg, takes, opts) // its errors are errs, reported once
			cfg.Offer = nil
			if at.At == tenancy.Dedicated {
				cfg.client, cfg.connect, cfg.FromGraph = nil, nil, false
			} else {
				cfg.routed = nil
			}
			cfg.sources = 0
			for _, set := range []bool{cfg.client != nil, cfg.connect != nil, cfg.FromGraph, cfg.routed != nil} {
				if set {
					cfg.sources++
				}
			}
			return module(modules.PlacedModuleName(name, at.At), cfg)
		},
		Provide: provide})
}
