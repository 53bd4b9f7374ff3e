package postgres

import (
	"reflect"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// inShared is rel as the tagged placement of a module with Placements
// names it: in the module's static schema, shared by the tenants placed
// there; rel itself everywhere else.
func (cfg *config) inShared(rel naming.Name) naming.Name {
	if cfg.placed == nil || cfg.placed.At != tenancy.Tagged || !rel.PerTenant() {
		return rel
	}
	return naming.Shared(rel.Base())
}

// placedModule is Module for a module with modules.Placements, which
// makes it offer each tier of parent.Offer to its tenants, each
// tenant served at the one its record names (Tenants.Place, or the store
// LifecycleConfig.Placed reads; the offer's Default without a record):
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
func placedModule(name string, opts []Option, parent *config, errs []error) fx.Option {
	types := map[reflect.Type]int{}
	for _, r := range parent.routes {
		types[r.typ]++
	}
	var unplaced []modules.PlacedRefusal
	var provide []func(modules.Offer, map[tenancy.Tier]string) fx.Option
	for _, r := range parent.routes {
		if r.placedProvide == nil {
			unplaced = append(unplaced, modules.UnplacedKind(r.name, string(r.kind), "document, counter and outbox"))
			continue
		}
		unnamed := r.kind == kindDocument && types[r.typ] == 1 && !parent.namedOnly
		provide = append(provide, func(o modules.Offer, subs map[tenancy.Tier]string) fx.Option {
			return r.placedProvide(name, r.name, o, subs, unnamed)
		})
	}
	return modules.PlacedModule(modules.PlacedSpec{Backend: rules.Name, Module: name, Offer: *parent.Offer, Problems: errs, Unplaced: unplaced,
		Shared: parent.dsn != "" || parent.pool != nil, Routed: parent.resolve != nil, Own: "databases",
		SharedFix: "add postgres.Connect(dsn) or postgres.Use(pool) to the module", RoutedFix: "add postgres.Routed(resolver, config) to the module",
		Build: func(at modules.Placement, problems []error) fx.Option {
			// placed is set first: the routes' options read it (inShared).
			cfg := &config{name: modules.PlacedModuleName(name, at.At), prefix: defaultSchemaPrefix, static: defaultStaticSchema, placed: &at}
			_ = modules.Configure(rules, cfg.name, cfg, takes, opts) // its errors are errs, reported once
			cfg.Offer = nil
			if at.At == tenancy.Dedicated {
				cfg.dsn, cfg.pool = "", nil
			} else {
				cfg.resolve, cfg.routedSet = nil, false
			}
			cfg.errs = append(cfg.errs, problems...)
			return module(cfg)
		},
		Provide: provide})
}

// checkPlaced refuses a route of a placement's module that does not reach
// the placement's tier: its relations or its tenant marker say otherwise.
func (cfg *config) checkPlaced(r *routeSpec) []error {
	if cfg.placed == nil || cfg.resolve == nil && cfg.dsn == "" && cfg.pool == nil {
		return nil // a placement without its server is refused already
	}
	return modules.PlacedTier(rules.Name, cfg.name, r.name, cfg.placed, r.decision.Reached,
		"declare the route tenant-aware, its relations naming.PerTenant (tagged: in the shared tables; namespace: in the tenant's schema; dedicated: in the tenant's database)")
}

// placedProvider is the placedProvide of a route whose object of type R
// wrap makes from its placements' objects.
func placedProvider[R any](wrap func(*modules.PlacedRoute[R]) R) func(module, route string, o modules.Offer, subs map[tenancy.Tier]string, unnamed bool) fx.Option {
	return func(module, route string, o modules.Offer, subs map[tenancy.Tier]string, unnamed bool) fx.Option {
		return modules.ProvidePlaced(rules.Name, module, route, o, subs, unnamed, wrap)
	}
}
