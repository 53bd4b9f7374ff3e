package redis

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
func Placements(o modules.Offer) Option { return func(c *config) { c.offer = &o } }

// inShared is rc as the tagged placement of a module with Placements
// declares it: without its namespace, in the shared keyspace; rc itself
// everywhere else.
func (cfg *config) inShared(rc RouteConfig) RouteConfig {
	if cfg.placed != nil && cfg.placed.At == tenancy.Tagged && rc.Namespace.PerTenant() {
		rc.Namespace = naming.Name{}
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
	if cfg.placed == nil || cfg.sources == 0 {
		return nil // a placement without its server is refused already
	}
	reached := rules.Decide(r.floorsRoute(cfg.routed != nil)).Reached
	if reached == cfg.placed.At {
		return nil
	}
	return []error{&tenancy.Error{Code: tenancy.CodeTenantPlacementInvalid, Backend: rules.Name, Module: module, Route: r.name,
		Tiers: true, Reached: reached, Required: cfg.placed.At,
		Detail: fmt.Sprintf("at the %s placement the route reaches %s", cfg.placed.At, reached),
		Fix:    "declare the route tenant-aware, its Namespace naming.PerTenant (tagged: the shared keyspace; namespace: the tenant's own; dedicated: the tenant's own server)"}}
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
		bad("", "redis.Placements: "+p, "offer two or three of tagged, namespace and dedicated, each once, with a default among them")
		o = modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged} // to build the stand-ins
	}
	for _, r := range parent.routes {
		if placedKinds[string(r.kind)] == nil {
			bad(r.name, fmt.Sprintf("a %s route cannot be placed per tenant yet", r.kind), "keep cache and counter routes in the module with placements, and put the others in a module of their own")
		}
	}
	if len(parent.workers) > 0 {
		bad("", "workers cannot drain a module with placements yet", "put the stream and its worker in a module of their own")
	}
	shared := parent.client != nil || parent.connect != nil || parent.fromGraph
	for _, at := range o.Tiers {
		switch {
		case at == tenancy.Dedicated && parent.routed == nil:
			bad("", "the dedicated placement needs the tenants' own servers", "add redis.Routed(resolver, config) to the module")
		case at != tenancy.Dedicated && !shared:
			bad("", fmt.Sprintf("the %s placement needs the shared server", at), "add redis.Connect(opts), redis.Use(client) or redis.FromGraph() to the module")
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
			cfg.client, cfg.connect, cfg.fromGraph = nil, nil, false
		} else {
			cfg.routed = nil
		}
		cfg.sources = 0
		for _, set := range []bool{cfg.client != nil, cfg.connect != nil, cfg.fromGraph, cfg.routed != nil} {
			if set {
				cfg.sources++
			}
		}
		if i == 0 {
			cfg.errs = problems
		}
		subs[at] = modules.PlacedModuleName(name, at)
		parts = append(parts, module(subs[at], cfg))
	}
	for _, r := range parent.routes {
		if provide := placedKinds[string(r.kind)]; provide != nil {
			parts = append(parts, provide(name, r.name, o, subs))
		}
	}
	return fx.Options(parts...)
}
