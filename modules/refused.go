package modules

import (
	"errors"
	"reflect"
	"strings"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
)

// Provided is a type a module provides, with its fx name ("" for an
// unnamed value): what an app may ask the module for.
type Provided struct {
	Type reflect.Type
	Name string
}

// ProvideRefused is Provide for a module refused for its options. Besides
// the wiring, it provides a stand-in for each type the module would have
// provided, whose constructor returns the app's refusal: every option,
// floor and worker violation, joined as the check at fx.New reports them.
//
// Without stand-ins, an app's own invoke that runs before the module's
// check (one inside an fx.Module placed ahead of it) would ask for a type
// nobody provides, and fx.New would fail with dig's "missing type" instead
// of the coded refusal. With them the refusal wins in any order. A
// stand-in is never built when the check runs first, nor by DryRun.
//
// A Provided whose name would break an fx name tag, and a repeat of one
// already listed, are left out: providing either would fail fx.New before
// any check runs.
func ProvideRefused(m floors.Module, problems []error, provides ...Provided) fx.Option {
	opts := []fx.Option{Provide(m, problems...)}
	seen := map[Provided]bool{}
	for _, p := range provides {
		if p.Type == nil || seen[p] || strings.ContainsAny(p.Name, "\"`\\") {
			continue
		}
		seen[p] = true
		opts = append(opts, standIn(p))
	}
	return fx.Options(opts...)
}

var (
	liveType  = reflect.TypeFor[Live]()
	errorType = reflect.TypeFor[error]()
)

// standIn provides p with a constructor that fails with the app's refusal.
func standIn(p Provided) fx.Option {
	typ := reflect.FuncOf([]reflect.Type{liveType}, []reflect.Type{p.Type, errorType}, false)
	fn := reflect.MakeFunc(typ, func(args []reflect.Value) []reflect.Value {
		err := args[0].Interface().(Live).refusal()
		return []reflect.Value{reflect.Zero(p.Type), reflect.ValueOf(&err).Elem()}
	}).Interface()
	if p.Name == "" {
		return fx.Provide(fn)
	}
	return fx.Provide(fx.Annotate(fn, fx.ResultTags(`name:"`+p.Name+`"`)))
}

// errNoViolation cannot happen: a stand-in exists only in an app holding a
// module with option errors.
var errNoViolation = errors.New("tenantwire: a refused module's stand-in was built, but the app's check found no violation")

// refusal is the app's check as fx.New reports it.
func (l Live) refusal() error {
	rep := l.check(floors.Verify)
	if rep.OK() {
		return errNoViolation
	}
	return refused(rep.Errors)
}

// AlsoNamed provides the route object of type R the app already has
// unnamed under name:"<route>" too, so a document route is injected the
// same way on every backend: by its route's name, or unnamed while it is
// the only route of its type. List both in the route's Provided.
func AlsoNamed[R any](route string) fx.Option {
	return fx.Provide(fx.Annotate(func(r R) R { return r }, fx.ResultTags(`name:"`+route+`"`)))
}
