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
)

// workerSpec is a background worker over one route of its module: a relay
// or a retention sweep.
type workerSpec struct {
	name, route string
	what        string
	kinds       []floors.Kind
	binding     floors.Binding
	bad         []problem
	build       func(obj any, log workerLog) (runner, error)
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

// problem is a worker misconfiguration: what is wrong and exactly what to
// change.
type problem struct{ msg, fix string }

// check reports misconfiguration as wiring_invalid. A route the module does
// not declare is left to the floors check (worker_route_unknown).
func (w workerSpec) check(module string, routes []*routeSpec) []error {
	var errs []error
	for _, b := range w.bad {
		errs = append(errs, rules.WiringInvalid(module, w.route, w.what+" "+w.name+": "+b.msg, b.fix))
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

// workerLog is a worker's logger: the app's (or own, when the worker's
// config sets one) with the worker's backend, module, route and name.
type workerLog func(own *slog.Logger) *slog.Logger

// decl is the worker as enforcement sees it.
func (w workerSpec) decl(module string) floors.Worker {
	return floors.Worker{Name: w.name, Module: module, Route: w.route, Binding: w.binding}
}

// options declares the worker to enforcement and runs it from OnStart to
// OnStop. Enforcement runs during fx.New, so a refused worker never starts.
func (w workerSpec) run(module string, routes []*routeSpec) fx.Option {
	r := w.find(routes)
	if r == nil || r.object == nil || !slices.Contains(w.kinds, r.kind) {
		return nil // the check refuses it: worker_route_unknown or a kind problem
	}
	return fx.Invoke(fx.Annotate(func(lc fx.Lifecycle, c *Client, app *slog.Logger) error {
		log := func(own *slog.Logger) *slog.Logger {
			if own != nil {
				app = own
			}
			return modules.WorkerLogger(app, rules.Name, module, w.route, w.name)
		}
		run, err := w.build(r.object(c), log)
		if err != nil {
			return fmt.Errorf("postgres %s %s: %w", w.what, w.name, err)
		}
		lc.Append(fx.Hook{OnStart: run.Start, OnStop: run.Stop})
		return nil
	}, fx.ParamTags(``, ``, `optional:"true"`)))
}
