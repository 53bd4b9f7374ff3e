package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// workerSpec is a background worker over one route of its module: a relay
// or a retention sweep.
type workerSpec struct {
	name, route string
	what        string
	kinds       []floors.Kind
	binding     floors.Binding
	bad         []tenancy.Problem
	build       func(obj any, wire workerWire) (runner, error)
}

// runner is a started worker's lifecycle.
type runner interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

func (w workerSpec) find(routes []*routeSpec) *routeSpec {
	for _, r := range routes {
		if r.name == w.route {
			return r
		}
	}
	return nil
}

// check reports misconfiguration as wiring_invalid. A route the module does
// not declare is left to the floors check (worker_route_unknown).
func (w workerSpec) check(module string, routes []*routeSpec) []error {
	var errs []error
	for _, b := range w.bad {
		errs = append(errs, rules.WiringInvalid(module, w.route, w.what+" "+w.name+": "+b.Detail, b.Fix))
	}
	if r := w.find(routes); r != nil && !slices.Contains(w.kinds, r.kind) {
		kinds := make([]string, len(w.kinds))
		for i, k := range w.kinds {
			kinds[i] = string(k)
		}
		errs = append(errs, rules.WiringInvalid(module, w.route,
			fmt.Sprintf("%s %s drains a %s route", w.what, w.name, r.kind),
			"point it at a route of kind "+strings.Join(kinds, " or ")))
	}
	return errs
}

// workerWire completes a worker's WorkerConfig for its run: its Logger
// the app's (or its own, when set) with the worker's backend, module,
// route and name, its Fence the app's suspensions, and its defaults.
type workerWire func(wc shards.WorkerConfig) shards.WorkerConfig

// checked adds a worker config's refusals to w's.
func (w *workerSpec) checked(ps []tenancy.Problem) {
	w.bad = append(w.bad, ps...)
}

// decl is the worker as enforcement sees it.
func (w workerSpec) decl(module string) floors.Worker {
	return floors.Worker{Name: w.name, Module: module, Route: w.route, Binding: w.binding}
}

// options declares the worker to enforcement and runs it from OnStart to
// OnStop. Enforcement runs during fx.New, so a refused worker never starts.
// A worker of one placement of a module with placements serves only the
// tenants placed there (modules.Suspensions.ServeAt).
func (w workerSpec) run(module string, routes []*routeSpec, at *modules.Placement) fx.Option {
	r := w.find(routes)
	if r == nil || r.object == nil || !slices.Contains(w.kinds, r.kind) {
		return nil // the check refuses it: worker_route_unknown or a kind problem
	}
	return fx.Invoke(fx.Annotate(func(lc fx.Lifecycle, c *Client, app *slog.Logger) error {
		wire := func(wc shards.WorkerConfig) shards.WorkerConfig {
			log := app
			if wc.Logger != nil {
				log = wc.Logger
			}
			wc.Logger, wc.Fence = modules.WorkerLogger(log, rules.Name, module, w.route, w.name), c.suspensions.Fence()
			if at != nil {
				wc.Fence = c.suspensions.ServeAt(*at)
			}
			return wc.WithDefaults()
		}
		run, err := w.build(r.object(c), wire)
		if err != nil {
			return fmt.Errorf("postgres %s %s: %w", w.what, w.name, err)
		}
		lc.Append(fx.Hook{OnStart: run.Start, OnStop: run.Stop})
		return nil
	}, fx.ParamTags(``, ``, `optional:"true"`)))
}
