// Package modules is the fx glue: a backend module contributes its wiring
// with Provide, users and shipped workers declare background readers with
// Worker, and both add the enforcing fx.Invoke, so including a module in an
// app is enough for its floors to be checked during fx.New, before any
// OnStart hook can run.
//
// Provide and ProvideRefused are for backend authors. An application uses only Worker (to
// declare a background reader of its own), Live (the tenancy matrix and
// warnings of the running app) and DryRun (every violation and the matrix
// of an app's options, without building it).
package modules

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

const (
	wiringGroup = `group:"tenantwire_wiring"`
	workerGroup = `group:"tenantwire_workers"`
)

// Wiring is one module's contribution to the app's checked wiring.
type Wiring struct {
	Module floors.Module
	// Problems are the module's own option errors (a bad DSN, two routes
	// of one name), each a *tenancy.Error; they are reported together with
	// every floor and worker violation of the app.
	Problems []error
	checked  atomic.Bool
}

// workerDecl is one background reader declared to the app.
type workerDecl struct {
	Worker  floors.Worker
	checked atomic.Bool
}

// Provide contributes a module's wiring to the app and enforces it. Each
// app gets its own Wiring value, so one Option can build many apps.
//
// problems are the module's option errors. A backend passes them here
// rather than to fx.Error: fx.Error stops fx.New before any check runs, so
// it would hide every other module's violations. A module with problems
// should provide no constructor of its own: ProvideRefused is this, with
// stand-ins for the types it would have provided.
func Provide(m floors.Module, problems ...error) fx.Option {
	problems = slices.Clip(slices.DeleteFunc(slices.Clone(problems), func(e error) bool { return e == nil }))
	return fx.Options(
		fx.Provide(fx.Annotate(func() *Wiring { return &Wiring{Module: m, Problems: problems} }, fx.ResultTags(wiringGroup))),
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
		fx.Provide(fx.Annotate(func() *workerDecl { return &workerDecl{Worker: w} }, fx.ResultTags(workerGroup))),
		enforce,
	)
}

var enforce = fx.Invoke(enforceApp)

// Live is the app's wiring as fx assembled it: inject it to print the live
// matrix at boot or serve it on an operator endpoint.
type Live struct {
	fx.In

	Wirings []*Wiring     `group:"tenantwire_wiring"`
	Workers []*workerDecl `group:"tenantwire_workers"`
	Logger  *slog.Logger  `optional:"true"`
	// Telemetry records a refusal at fx.New as a span (nil: none).
	Telemetry *telemetry.Telemetry `optional:"true"`
}

// Report checks the whole wiring and builds the matrix. Its Errors hold
// the modules' option errors, then every floor and worker violation; its
// Warnings are the findings the check at fx.New logs.
func (l Live) Report() floors.Report { return l.check(floors.Check) }

func (l Live) check(run func([]floors.Module, []floors.Worker) floors.Report) floors.Report {
	wirings := slices.Clone(l.Wirings)
	// dig delivers value groups in no fixed order; sort for stable output.
	slices.SortStableFunc(wirings, func(a, b *Wiring) int { return strings.Compare(a.Module.Name, b.Module.Name) })
	mods := make([]floors.Module, len(wirings))
	var problems []error
	for i, w := range wirings {
		mods[i] = w.Module
		problems = append(problems, w.Problems...)
	}
	workers := make([]floors.Worker, len(l.Workers))
	for i, w := range l.Workers {
		workers[i] = w.Worker
	}
	slices.SortStableFunc(workers, func(a, b floors.Worker) int { return strings.Compare(a.Name, b.Name) })
	rep := run(mods, workers)
	if len(problems) > 0 {
		rep.Errors = append(problems, rep.Errors...)
		markRefused(&rep.Matrix, problems)
	}
	return rep
}

// markRefused gives a route refused by its module's options (every route
// of the module, for a module-level option error) that verdict, so the
// matrix shows it refused even when its floors are met.
func markRefused(m *floors.Matrix, problems []error) {
	for _, p := range problems {
		var e *tenancy.Error
		if !errors.As(p, &e) {
			continue
		}
		for i := range m.Rows {
			r := &m.Rows[i]
			if r.Module == e.Module && (e.Route == "" || r.Route == e.Route) && r.Verdict == floors.VerdictOK {
				r.Verdict = string(e.Code)
			}
		}
	}
}

// Matrix is the live tenancy matrix: every route of every module, with the
// tier it reaches and its verdict.
func (l Live) Matrix() floors.Matrix { return l.Report().Matrix }

// enforceApp checks every module and worker in the app and returns every
// violation joined, each a *tenancy.Error. It runs as an fx.Invoke of each
// module; the first run checks the whole app and later runs return at once.
func enforceApp(l Live) error {
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
		l.Telemetry.WiringRefused(rep.Errors)
		return refused(rep.Errors)
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
