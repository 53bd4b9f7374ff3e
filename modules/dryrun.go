package modules

import (
	"errors"
	"fmt"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
)

// errDryRunDone stops fx.New once the wiring is read: fx runs no invoke
// after a failing one, so no constructor of the app is ever called.
var errDryRunDone = errors.New("tenantwire: dry run ends before the app's own invokes")

// declared is the app's tenancy wiring and nothing else: unlike Live it
// asks for no logger, whose constructor is the app's own.
type declared struct {
	fx.In

	Wirings []*Wiring     `group:"tenantwire_wiring"`
	Workers []*workerDecl `group:"tenantwire_workers"`
}

// DryRun checks an app's tenancy wiring without starting or building it:
// give it the options you pass to fx.New. It returns the full report (the
// matrix with a row for every route, refused ones included, and the
// warnings) and, when the app would be refused, an error joining every
// violation, each a *tenancy.Error: the modules' option errors together
// with every floor and worker violation, as fx.New reports them.
//
// No constructor of the app runs, neither the adapters' nor the app's
// own, and no OnStart hook: a module pointed at an unreachable server
// dry-runs as fast as one pointed at a live one. DryRun checks tenancy
// only; fx.ValidateApp checks the rest of the dependency graph. An error
// that stops fx before any invoke (a type provided twice, an fx.Error of
// the app's own) is returned with an empty report. The dry run ends by
// failing its first invoke, so an fx.ErrorHook of the app's is called
// with that error.
//
// Use it in CI or in a command that prints the matrix of a build before it
// ships; tenancytest.RequireMatrix compares it with a golden file.
func DryRun(opts ...fx.Option) (floors.Report, error) {
	var (
		rep  floors.Report
		read bool
	)
	app := fx.New(
		// First of the app's modules, so its invoke runs before any other.
		fx.Module("tenantwire.dryrun", fx.Invoke(func(d declared) error {
			rep, read = Live{Wirings: d.Wirings, Workers: d.Workers}.Report(), true
			return errDryRunDone
		})),
		fx.Options(opts...),
		// Last, so it replaces any logger of the app's: that logger's
		// constructor would run before the first invoke.
		fx.NopLogger,
	)
	if !read {
		return floors.Report{}, fmt.Errorf("tenantwire: dry run: fx stopped before the wiring could be read: %w", app.Err())
	}
	if !rep.OK() {
		return rep, refused(rep.Errors)
	}
	return rep, nil
}

func refused(errs []error) error {
	return fmt.Errorf("tenantwire: wiring refused (%d violation(s)): %w", len(errs), errors.Join(errs...))
}
