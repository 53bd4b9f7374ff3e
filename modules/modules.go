// Package modules is the fx glue: a backend module contributes its wiring
// with Provide, users and shipped workers declare background readers with
// Worker, and both add the enforcing fx.Invoke, so including a module in an
// app is enough for its floors to be checked during fx.New, before any
// OnStart hook can run.
//
// Provide is for backend authors. An application uses only Worker (to
// declare a background reader of its own) and Live (the tenancy matrix of
// the running app).
package modules

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
)

const (
	wiringGroup = `group:"tenantwire_wiring"`
	workerGroup = `group:"tenantwire_workers"`
)

// Wiring is one module's contribution to the app's checked wiring.
type Wiring struct {
	Module  floors.Module
	checked atomic.Bool
}

// WorkerDecl is one background reader declared to the app.
type WorkerDecl struct {
	Worker  floors.Worker
	checked atomic.Bool
}

// Provide contributes a module's wiring to the app and enforces it. Each
// app gets its own Wiring value, so one Option can build many apps.
func Provide(m floors.Module) fx.Option {
	return fx.Options(
		fx.Provide(fx.Annotate(func() *Wiring { return &Wiring{Module: m} }, fx.ResultTags(wiringGroup))),
		enforce,
	)
}

// Worker declares a background reader (a relay, consumer, sweep or
// scheduler) and how it binds tenants. The shipped workers call it for
// themselves; a user's own worker calls it the same way and gets the same
// check: an unbound worker over a tenant-scoped route is refused with
// tenant_global_required during fx.New, so it never starts.
func Worker(w floors.Worker) fx.Option {
	return fx.Options(
		fx.Provide(fx.Annotate(func() *WorkerDecl { return &WorkerDecl{Worker: w} }, fx.ResultTags(workerGroup))),
		enforce,
	)
}

var enforce = fx.Invoke(Enforce)

// Live is the app's wiring as fx assembled it: inject it to print the live
// matrix at boot or serve it on an operator endpoint.
type Live struct {
	fx.In

	Wirings []*Wiring     `group:"tenantwire_wiring"`
	Workers []*WorkerDecl `group:"tenantwire_workers"`
	Logger  *slog.Logger  `optional:"true"`
}

// Report checks the whole wiring and builds the matrix.
func (l Live) Report() floors.Report { return l.check(floors.Check) }

func (l Live) check(run func([]floors.Module, []floors.Worker) floors.Report) floors.Report {
	mods := make([]floors.Module, len(l.Wirings))
	for i, w := range l.Wirings {
		mods[i] = w.Module
	}
	workers := make([]floors.Worker, len(l.Workers))
	for i, w := range l.Workers {
		workers[i] = w.Worker
	}
	// dig delivers value groups in no fixed order; sort for stable output.
	slices.SortStableFunc(mods, func(a, b floors.Module) int { return strings.Compare(a.Name, b.Name) })
	slices.SortStableFunc(workers, func(a, b floors.Worker) int { return strings.Compare(a.Name, b.Name) })
	return run(mods, workers)
}

// Matrix is the live tenancy matrix: every route of every module, with the
// tier it reaches and its verdict.
func (l Live) Matrix() floors.Matrix { return l.Report().Matrix }

// Enforce checks every module and worker in the app and returns every
// violation joined, each a *tenancy.Error. It runs as an fx.Invoke of each
// module; the first run checks the whole app and later runs return at once.
func Enforce(l Live) error {
	if l.allChecked() {
		return nil
	}
	rep := l.check(floors.Verify)
	for _, w := range l.Wirings {
		w.checked.Store(true)
	}
	for _, w := range l.Workers {
		w.checked.Store(true)
	}
	log := l.Logger
	if log == nil {
		log = slog.Default()
	}
	for _, w := range rep.Warnings {
		log.Warn("tenantwire: redundant tenant marker", "module", w.Module, "route", w.Route, "detail", w.Message)
	}
	if !rep.OK() {
		return fmt.Errorf("tenantwire: wiring refused (%d violation(s)): %w", len(rep.Errors), errors.Join(rep.Errors...))
	}
	return nil
}

func (l Live) allChecked() bool {
	for _, w := range l.Wirings {
		if !w.checked.Load() {
			return false
		}
	}
	for _, w := range l.Workers {
		if !w.checked.Load() {
			return false
		}
	}
	return true
}
