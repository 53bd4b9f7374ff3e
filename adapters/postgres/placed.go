package postgres

import (
	"fmt"
	"reflect"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Placements makes the module offer each tier of o to its tenants, each
// tenant served at the one its record names (Tenants.Place, or the store
// LifecycleConfig.Placed reads; o.Default without a record):
//
//   - tagged: the module's shared tables (Connect or Use), every row
//     stamped with its tenant; each route must be tenant-aware;
//   - namespace: the tenant's own schema on the same server, its tables
//     those the routes name naming.PerTenant;
//   - dedicated: the tenant's own database, through Routed.
//
// The module is then one module per placement, named "<name>.<tier>"
// (errors, the matrix, migrations, telemetry and Tenants' reports name
// them so), each checked at fx.New as a module of its own: the module's
// floor holds for its weakest placement. Its route objects are provided
// once, under the route names, and serve each call from the tenant's
// placement. Document, counter and outbox routes can be placed; each
// placement runs the module's relays and sweeps over its own outbox, for
// the tenants placed there, so a moved tenant's rows are drained from its
// new placement; see docs/tiered-tenancy.md.
func Placements(o modules.Offer) Option { return func(c *config) { c.offer = &o } }

// placedAt is what a module of one placement of a placed module knows of
// it: the tier it serves and the module it is part of.
type placedAt struct {
	module string
	at     tenancy.Tier
	offer  modules.Offer
}

// placement is the kit's mark on the module's tenant state: nil unless
// the module serves one placement of a placed module.
func (cfg *config) placement() *modules.Placement {
	if cfg.placed == nil {
		return nil
	}
	return &modules.Placement{Module: cfg.placed.module, At: cfg.placed.at, Offer: cfg.placed.offer}
}

// inShared is rel as the tagged placement of a module with Placements
// names it: in the module's static schema, shared by the tenants placed
// there; rel itself everywhere else.
func (cfg *config) inShared(rel naming.Name) naming.Name {
	if cfg.placed == nil || cfg.placed.at != tenancy.Tagged || !rel.PerTenant() {
		return rel
	}
	return naming.Shared(rel.Base())
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
		bad("", "postgres.Placements: "+p, "offer two or three of tagged, namespace and dedicated, each once, with a default among them")
		o = modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged} // to build the stand-ins
	}
	for _, r := range parent.routes {
		if r.placedProvide == nil {
			bad(r.name, fmt.Sprintf("a %s route cannot be placed per tenant yet", r.kind), "keep document, counter and outbox routes in the module with placements, and put the others in a module of their own")
		}
	}
	for _, at := range o.Tiers {
		switch {
		case at == tenancy.Dedicated && parent.resolve == nil:
			bad("", "the dedicated placement needs the tenants' own databases", "add postgres.Routed(resolver, config) to the module")
		case at != tenancy.Dedicated && parent.dsn == "" && parent.pool == nil:
			bad("", fmt.Sprintf("the %s placement needs the shared server", at), "add postgres.Connect(dsn) or postgres.Use(pool) to the module")
		}
	}
	parts := make([]fx.Option, 0, len(o.Tiers)+len(parent.routes))
	subs := make(map[tenancy.Tier]string, len(o.Tiers))
	for i, at := range o.Tiers {
		// placed is set first: the routes' options read it (inShared).
		cfg := &config{name: modules.PlacedModuleName(name, at), prefix: defaultSchemaPrefix, static: defaultStaticSchema,
			placed: &placedAt{module: name, at: at, offer: o}}
		for _, opt := range opts {
			opt(cfg)
		}
		cfg.offer = nil
		if at == tenancy.Dedicated {
			cfg.dsn, cfg.pool = "", nil
		} else {
			cfg.resolve = nil
		}
		if i == 0 {
			cfg.errs = append(cfg.errs, problems...)
		}
		subs[at] = cfg.name
		parts = append(parts, module(cfg))
	}
	types := map[reflect.Type]int{}
	for _, r := range parent.routes {
		types[r.typ]++
	}
	for _, r := range parent.routes {
		if r.placedProvide != nil {
			unnamed := r.kind == kindDocument && types[r.typ] == 1 && !parent.namedOnly
			parts = append(parts, r.placedProvide(name, r.name, o, subs, unnamed))
		}
	}
	return fx.Options(parts...)
}

// checkPlaced refuses a route of a placement's module that does not reach
// the placement's tier: its relations or its tenant marker say otherwise.
func (cfg *config) checkPlaced(r *routeSpec) []error {
	if cfg.placed == nil || r.decision.Reached == cfg.placed.at || cfg.resolve == nil && cfg.dsn == "" && cfg.pool == nil {
		return nil // a placement without its server is refused already
	}
	fix := "declare the route tenant-aware, its relations naming.PerTenant"
	return []error{&tenancy.Error{Code: tenancy.CodeTenantPlacementInvalid, Backend: rules.Name, Module: cfg.name, Route: r.name,
		Tiers: true, Reached: r.decision.Reached, Required: cfg.placed.at,
		Detail: fmt.Sprintf("at the %s placement the route reaches %s", cfg.placed.at, r.decision.Reached),
		Fix:    fix + " (tagged: in the shared tables; namespace: in the tenant's schema; dedicated: in the tenant's database)"}}
}

// placedProvider is the placedProvide of a route whose object of type R
// wrap makes from its placements' objects.
func placedProvider[R any](wrap func(*modules.PlacedRoute[R]) R) func(module, route string, o modules.Offer, subs map[tenancy.Tier]string, unnamed bool) fx.Option {
	return func(module, route string, o modules.Offer, subs map[tenancy.Tier]string, unnamed bool) fx.Option {
		return modules.ProvidePlaced(rules.Name, module, route, o, subs, unnamed, wrap)
	}
}
