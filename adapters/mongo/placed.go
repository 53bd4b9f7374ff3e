package mongo

import (
	"fmt"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Placements makes the module offer each tier of o to its tenants, each
// tenant served at the one its record names (Tenants.Place, or the store
// LifecycleConfig.Placed reads; o.Default without a record):
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
// tenant's placement. Document and counter routes can be placed; see
// docs/tiered-tenancy.md.
func Placements(o modules.Offer) Option { return func(c *config) { c.offer = &o } }

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

// privateName is the name the module provides route's object under: its
// own, or, on a placement's module, the private name the placed module's
// object is made from.
func (cfg *config) privateName(route string) string {
	if cfg.placed == nil {
		return route
	}
	return modules.PlacedRouteName(modules.PlacedModuleName(cfg.placed.Module, cfg.placed.At), route)
}

// checkPlaced refuses a route of a placement's module that does not reach
// the placement's tier.
func (cfg *config) checkPlaced(module string, r *routeSpec) []error {
	if cfg.placed == nil || cfg.sources() == 0 {
		return nil // a placement without its server is refused already
	}
	reached := rules.Decide(r.floorsRoute(cfg.routed != nil)).Reached
	if reached == cfg.placed.At {
		return nil
	}
	return []error{&tenancy.Error{Code: tenancy.CodeTenantPlacementInvalid, Backend: rules.Name, Module: module, Route: r.name,
		Tiers: true, Reached: reached, Required: cfg.placed.At,
		Detail: fmt.Sprintf("at the %s placement the route reaches %s", cfg.placed.At, reached),
		Fix:    "declare the route tenant-aware, its Collection naming.PerTenant (tagged: one shared collection; namespace: the tenant's own; dedicated: in the tenant's own server)"}}
}

// placedModule is Module for a module with Placements: a module per tier
// offered, built from the same options, and the route objects that pick
// between them.
func placedModule(name string, opts []Option, parent *config) fx.Option {
	o := *parent.offer
	var problems []error
	bad := func(route, detail, fix string) {
		problems = append(problems, &tenancy.Error{Code: tenancy.CodeTenantPlacementInvalid, Backend: rules.Name, Module: name, Route: route, Detail: detail, Fix: fix})
	}
	if p := o.Problem(); p != "" {
		bad("", "mongo.Placements: "+p, "offer two or three of tagged, namespace and dedicated, each once, with a default among them")
		o = modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged} // to build the stand-ins
	}
	for _, r := range parent.routes {
		if r.placedProvide == nil {
			bad(r.name, fmt.Sprintf("a %s route cannot be placed per tenant yet", r.kind), "keep document and counter routes in the module with placements, and put the others in a module of their own")
		}
	}
	if len(parent.relays) > 0 {
		bad("", "relays cannot drain a module with placements yet", "put the outbox and its relay in a module of their own")
	}
	shared := parent.client != nil || parent.uri != "" || parent.fromGraph
	for _, at := range o.Tiers {
		switch {
		case at == tenancy.Dedicated && parent.routed == nil:
			bad("", "the dedicated placement needs the tenants' own servers", "add mongo.Routed(resolver, config) to the module")
		case at != tenancy.Dedicated && !shared:
			bad("", fmt.Sprintf("the %s placement needs the shared server", at), "add mongo.Connect(uri), mongo.Use(client) or mongo.FromGraph() to the module")
		}
	}
	parts := make([]fx.Option, 0, len(o.Tiers)+len(parent.routes))
	subs := make(map[tenancy.Tier]string, len(o.Tiers))
	for i, at := range o.Tiers {
		// placed is set first: the routes' options read it (inShared).
		cfg := &config{placed: &modules.Placement{Module: name, At: at, Offer: o}}
		for _, opt := range opts {
			opt(cfg)
		}
		cfg.offer = nil
		if at == tenancy.Dedicated {
			cfg.client, cfg.uri, cfg.fromGraph = nil, "", false
		} else {
			cfg.routed = nil
		}
		if i == 0 {
			cfg.errs = problems
		}
		subs[at] = modules.PlacedModuleName(name, at)
		parts = append(parts, module(subs[at], cfg))
	}
	for _, r := range parent.routes {
		if r.placedProvide != nil {
			parts = append(parts, r.placedProvide(name, r.name, o, subs))
		}
	}
	return fx.Options(parts...)
}
