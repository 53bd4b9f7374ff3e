package mongo

import (
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// inShared is rc as the tagged placement of a module with Placements
// declares it: its per-tenant collection (and database) named once, in
// the module's database, shared by the tenants placed there; rc itself
// everywhere else.
func (cfg *config) inShared(rc RouteConfig) RouteConfig {
	if cfg.placed == nil || cfg.placed.At != tenancy.Tagged {
		return rc
	}
	if rc.Collection.PerTenant() {
		rc.Collection = naming.Shared(rc.Collection.Base())
	}
	if rc.Database.PerTenant() {
		rc.Database = naming.Name{}
	}
	return rc
}

// checkPlaced refuses a route of a placement's module that does not reach
// the placement's tier.
func (cfg *config) checkPlaced(module string, r *routeSpec) []error {
	if cfg.placed == nil || cfg.sources() == 0 {
		return nil // a placement without its server is refused already
	}
	return modules.PlacedTier(rules.Name, module, r.name, cfg.placed, rules.Decide(r.floorsRoute(cfg.routed != nil)).Reached,
		"declare the route tenant-aware, its Collection naming.PerTenant (tagged: one shared collection; namespace: the tenant's own; dedicated: in the tenant's own server)")
}

// placedModule is Module for a module with modules.Placements, which
// makes it offer each tier of parent.Offer to its tenants, each
// tenant served at the one its record names (Tenants.Place, or the store
// LifecycleConfig.Placed reads; the offer's Default without a record):
//
//   - tagged: the route's collection shared by the tenants placed there
//     (the base name of a per-tenant Collection, in the module's
//     database), every document stamped with its tenant; each route must
//     be tenant-aware;
//   - namespace: the tenant's own collection (or database) on the same
//     server, as the routes name it naming.PerTenant;
//   - dedicated: the tenant's own server, through Routed.
//
// The module is then one module per placement, named "<name>.<tier>",
// each checked at fx.New as a module of its own, and its route objects
// are provided once, under the route names, serving each call from the
// tenant's placement. Document, counter and outbox routes can be placed,
// each placement running the module's relays over its own outbox for the
// tenants placed there; see docs/tiered-tenancy.md.
func placedModule(name string, opts []Option, parent *config, errs []error) fx.Option {
	var unplaced []modules.PlacedRefusal
	var provide []func(modules.Offer, map[tenancy.Tier]string) fx.Option
	for _, r := range parent.routes {
		if r.placedProvide == nil {
			unplaced = append(unplaced, modules.UnplacedKind(r.name, string(r.kind), "document, counter and outbox"))
			continue
		}
		provide = append(provide, func(o modules.Offer, subs map[tenancy.Tier]string) fx.Option {
			return r.placedProvide(name, r.name, o, subs)
		})
	}
	return modules.PlacedModule(modules.PlacedSpec{Backend: rules.Name, Module: name, Offer: *parent.Offer, Problems: errs, Unplaced: unplaced,
		Shared: parent.client != nil || parent.uri != "" || parent.FromGraph, Routed: parent.routed != nil, Own: "servers",
		SharedFix: "add mongo.Connect(uri), mongo.Use(client) or modules.FromGraph() to the module", RoutedFix: "add mongo.Routed(resolver, config) to the module",
		Build: func(at modules.Placement, problems []error) fx.Option {
			// placed is set first: the routes' options read it (inShared).
			cfg := &config{placed: &at, errs: problems}
			_ = modules.Configure(rules, name, cfg, takes, opts) // its errors are errs, reported once
			cfg.Offer = nil
			if at.At == tenancy.Dedicated {
				cfg.client, cfg.uri, cfg.FromGraph = nil, "", false
			} else {
				cfg.routed = nil
			}
			return module(modules.PlacedModuleName(name, at.At), cfg)
		},
		Provide: provide})
}
