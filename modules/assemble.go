package modules

import (
	"fmt"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Spec is a backend module as Assemble builds it: what the backend
// supplies from its options, and nothing it would otherwise repeat. The
// kit checks the names, the connection source and every problem,
// declares the workers, and provides the module or refuses it.
type Spec struct {
	// Name is the module's name; Rules is its backend's.
	Name  string
	Rules floors.Backend
	// Floor, ConnBudget and WorstCaseConns are the module's declared
	// floor, connection budget and the most connections it can open.
	Floor                      tenancy.Tier
	ConnBudget, WorstCaseConns int
	// Placement: see floors.Module.Placement.
	Placement tenancy.Tier
	// Sources counts the connection sources the options name. A backend
	// whose module needs exactly one sets SourceFix, the sentence naming
	// them; none or several are refused at fx.New, so that DryRun sees a
	// module with no client as fx.New does.
	Sources   int
	SourceFix string
	// Problems are the module's own option errors, each a *tenancy.Error.
	Problems []error
	Routes   []RouteSpec
	Workers  []WorkerSpec
	// Parts are what an accepted module adds besides its routes: its
	// private core, a provisioner, hooks.
	Parts []fx.Option
	// Provided are the types Parts give the app, for a refused module's
	// stand-ins.
	Provided []Provided
}

// RouteSpec is one route: how enforcement sees it, what is wrong with its
// options, and what it gives the app.
type RouteSpec struct {
	Route    floors.Route
	Problems []tenancy.Problem
	// Provide gives the route to the app when the module is accepted;
	// Provided names the types it gives, for stand-ins.
	Provide  fx.Option
	Provided []Provided
}

// WorkerSpec is a background reader of the module: its declaration,
// checked with the floors, and its run, added only when the module is
// accepted.
type WorkerSpec struct {
	Worker   floors.Worker
	Problems []tenancy.Problem
	Run      fx.Option
}

// Assemble builds a backend module: its wiring checked during fx.New
// before any OnStart hook, then its parts, routes and workers, or, when
// any option is wrong, a stand-in of everything it would have provided
// that fails with the app's refusal. Workers are declared either way, so
// the refusal names their violations too.
func Assemble(s Spec) fx.Option {
	mod := floors.Module{Name: s.Name, Backend: s.Rules, Floor: s.Floor, ConnBudget: s.ConnBudget, WorstCaseConns: s.WorstCaseConns, Placement: s.Placement}
	errs := append([]error(nil), s.Problems...)
	if s.SourceFix != "" && s.Sources != 1 {
		what := "no connection source"
		if s.Sources > 1 {
			what = fmt.Sprintf("%d connection sources", s.Sources)
		}
		errs = append(errs, s.Rules.WiringInvalid(s.Name, "", "the module has "+what+"; exactly one is needed", s.SourceFix))
	}
	seen := map[string]bool{}
	provided := append([]Provided(nil), s.Provided...)
	for _, r := range s.Routes {
		mod.Routes = append(mod.Routes, r.Route)
		for _, p := range r.Problems {
			errs = append(errs, s.Rules.WiringInvalid(s.Name, r.Route.Name, p.Detail, p.Fix))
		}
		if seen[r.Route.Name] {
			errs = append(errs, s.Rules.WiringInvalid(s.Name, r.Route.Name, "two routes share the name", "give every route of a module its own name"))
		}
		seen[r.Route.Name] = true
		provided = append(provided, r.Provided...)
	}
	var parts []fx.Option
	for _, w := range s.Workers {
		for _, p := range w.Problems {
			errs = append(errs, s.Rules.WiringInvalid(s.Name, w.Worker.Route, p.Detail, p.Fix))
		}
		parts = append(parts, Worker(w.Worker))
	}
	if len(errs) > 0 {
		return fx.Module(s.Name, append(parts, ProvideRefused(mod, errs, provided...))...)
	}
	// Enforcement's invoke comes first, so no worker runs on refused wiring.
	parts = append(parts, Provide(mod))
	parts = append(parts, s.Parts...)
	for _, r := range s.Routes {
		if r.Provide != nil {
			parts = append(parts, r.Provide)
		}
	}
	for _, w := range s.Workers {
		if w.Run != nil {
			parts = append(parts, w.Run)
		}
	}
	return fx.Module(s.Name, parts...)
}
