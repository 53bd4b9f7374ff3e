package modules

import (
	"fmt"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
)

// PlacedSpec is what a backend gives PlacedModule to build a module with
// placements: the offer, what of the module it cannot place, where its
// servers are, and how it builds the module of one placement.
type PlacedSpec struct {
	Backend, Module string
	Offer           Offer
	// Problems are the module's option errors (modules.Configure's),
	// reported with the placements' refusals by the first placement.
	Problems []error
	// Unplaced is what the backend cannot place (a route kind, workers):
	// each is refused with tenant_placement_invalid.
	Unplaced []PlacedRefusal
	// Shared and Routed report whether the module has the shared server
	// and the tenants' own (Own: "databases", "servers"); SharedFix and
	// RoutedFix say how to add each.
	Shared, Routed       bool
	Own                  string
	SharedFix, RoutedFix string
	// Build is the module of placement at, built from the module's
	// options; problems, when set, are the placed module's refusals, for it
	// to report (the first placement's module reports them).
	Build func(at Placement, problems []error) fx.Option
	// Provide are the placed route objects, each made from the objects of
	// the placements' modules, which subs names by tier.
	Provide []func(o Offer, subs map[tenancy.Tier]string) fx.Option
}

// PlacedRefusal is one thing of a module a backend cannot place.
type PlacedRefusal struct{ Route, Detail, Fix string }

// PlacedModule is a module with placements: a module per tier offered,
// named PlacedModuleName, each checked at fx.New as a module of its own,
// and the route objects that serve each call from the tenant's
// placement. An offer the kit refuses is refused with its fix, and the
// placements' modules are built for a stand-in offer so that the app
// reports every refusal at once.
func PlacedModule(s PlacedSpec) fx.Option {
	o := s.Offer
	problems := append([]error(nil), s.Problems...)
	bad := func(route, detail, fix string) {
		problems = append(problems, &tenancy.Error{Code: tenancy.CodeTenantPlacementInvalid, Backend: s.Backend, Module: s.Module, Route: route, Detail: detail, Fix: fix})
	}
	if p := o.Problem(); p != "" {
		bad("", "modules.Placements: "+p, "offer two or three of tagged, namespace and dedicated, each once, with a default among them")
		o = Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged}
	}
	for _, u := range s.Unplaced {
		bad(u.Route, u.Detail, u.Fix)
	}
	for _, at := range o.Tiers {
		switch {
		case at == tenancy.Dedicated && !s.Routed:
			bad("", "the dedicated placement needs the tenants' own "+s.Own, s.RoutedFix)
		case at != tenancy.Dedicated && !s.Shared:
			bad("", fmt.Sprintf("the %s placement needs the shared server", at), s.SharedFix)
		}
	}
	parts := make([]fx.Option, 0, len(o.Tiers)+len(s.Provide))
	subs := make(map[tenancy.Tier]string, len(o.Tiers))
	for i, at := range o.Tiers {
		var mine []error
		if i == 0 {
			mine = problems
		}
		subs[at] = PlacedModuleName(s.Module, at)
		parts = append(parts, s.Build(Placement{Module: s.Module, At: at, Offer: o}, mine))
	}
	for _, p := range s.Provide {
		parts = append(parts, p(o, subs))
	}
	return fx.Options(parts...)
}

// UnplacedKind is the refusal of a route whose kind the backend cannot
// place; placeable lists the kinds it can ("document and counter").
func UnplacedKind(route, kind, placeable string) PlacedRefusal {
	return PlacedRefusal{Route: route, Detail: fmt.Sprintf("a %s route cannot be placed per tenant yet", kind),
		Fix: "keep " + placeable + " routes in the module with placements, and put the others in a module of their own"}
}

// PlacedTier refuses a route of at's module that reaches another tier
// than at's (none when it reaches it, or at is nil); fix says how to
// declare the route.
func PlacedTier(backend, module, route string, at *Placement, reached tenancy.Tier, fix string) []error {
	if at == nil || reached == at.At {
		return nil
	}
	return []error{&tenancy.Error{Code: tenancy.CodeTenantPlacementInvalid, Backend: backend, Module: module, Route: route,
		Tiers: true, Reached: reached, Required: at.At,
		Detail: fmt.Sprintf("at the %s placement the route reaches %s", at.At, reached), Fix: fix}}
}

// PlacedName is the name a module provides route's object under: the
// route's own, or, on the module of placement at, the private name the
// placed module's object is made from.
func PlacedName(at *Placement, route string) string {
	if at == nil {
		return route
	}
	return PlacedRouteName(PlacedModuleName(at.Module, at.At), route)
}
