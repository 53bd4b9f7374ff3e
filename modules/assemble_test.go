package modules_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

type thing struct{ name string }

// kitSpec is a module of one route over the kit, its route providing a
// *thing named after it.
func kitSpec(sources int, routes ...string) modules.Spec {
	s := modules.Spec{Name: "kit", Rules: backend, Sources: sources, SourceFix: "pass kit.Source(...)"}
	for _, r := range routes {
		s.Routes = append(s.Routes, modules.RouteSpec{
			Route:    floors.Route{Name: r, Kind: "document"},
			Provide:  fx.Provide(fx.Annotate(func() *thing { return &thing{r} }, fx.ResultTags(`name:"`+r+`"`))),
			Provided: []modules.Provided{{Type: reflect.TypeFor[*thing](), Name: r}},
		})
	}
	return s
}

// TestAssembleSources: a module needing one connection source is refused
// with none or two, at fx.New and by DryRun alike, before any constructor.
func TestAssembleSources(t *testing.T) {
	for _, n := range []int{0, 2} {
		mod := modules.Assemble(kitSpec(n, "a"))
		_, err := modules.DryRun(mod)
		var e *tenancy.Error
		if !errors.As(err, &e) || e.Code != tenancy.CodeWiringInvalid || e.Module != "kit" || e.Fix != "pass kit.Source(...)" {
			t.Fatalf("%d sources, dry run: %v", n, err)
		}
		if app := fx.New(fx.NopLogger, mod); tenancy.CodeOf(app.Err()) != tenancy.CodeWiringInvalid {
			t.Fatalf("%d sources, fx.New: %v", n, app.Err())
		}
	}
	if _, err := modules.DryRun(modules.Assemble(kitSpec(1, "a"))); err != nil {
		t.Fatal(err)
	}
	// A backend that needs no source says nothing of one.
	s := kitSpec(0, "a")
	s.SourceFix = ""
	if _, err := modules.DryRun(modules.Assemble(s)); err != nil {
		t.Fatal(err)
	}
}

// TestAssembleProvidesOrRefuses: an accepted module gives its routes and
// parts and runs its workers; a refused one (two routes of one name, a
// route's and a worker's problem) reports every problem with its route
// and gives stand-ins that fail with the refusal, in any invoke order.
func TestAssembleProvidesOrRefuses(t *testing.T) {
	ran := false
	s := kitSpec(1, "a", "b")
	s.Parts = []fx.Option{fx.Provide(fx.Annotate(func() *thing { return &thing{"part"} }, fx.ResultTags(`name:"part"`)))}
	s.Provided = []modules.Provided{{Type: reflect.TypeFor[*thing](), Name: "part"}}
	s.Workers = []modules.WorkerSpec{{Worker: floors.Worker{Name: "w", Module: "kit", Route: "a", Binding: floors.Sharded},
		Run: fx.Invoke(func() { ran = true })}}
	var got struct {
		fx.In
		A    *thing `name:"a"`
		Part *thing `name:"part"`
	}
	app := fx.New(fx.NopLogger, modules.Assemble(s), fx.Populate(&got))
	if err := app.Err(); err != nil || got.A.name != "a" || got.Part.name != "part" || !ran {
		t.Fatalf("accepted module: %v, %+v, worker ran %v", err, got, ran)
	}

	bad := kitSpec(1, "a", "a")
	bad.Routes[0].Problems = []tenancy.Problem{{Detail: "no table", Fix: "name one"}}
	bad.Workers = []modules.WorkerSpec{{Worker: floors.Worker{Name: "w", Module: "kit", Route: "a", Binding: floors.Sharded},
		Problems: []tenancy.Problem{{Detail: "no handler", Fix: "set one"}}, Run: fx.Invoke(func() { t.Error("a refused module's worker ran") })}}
	_, err := modules.DryRun(modules.Assemble(bad))
	var details []string
	for _, e := range codedErrors(err) {
		if e.Route != "a" || e.Code != tenancy.CodeWiringInvalid {
			t.Errorf("refusal %+v", e)
		}
		details = append(details, e.Detail)
	}
	slices.Sort(details)
	if !slices.Equal(details, []string{"no handler", "no table", "two routes share the name"}) {
		t.Fatalf("refusals %q", details)
	}
	var a *thing
	app = fx.New(fx.NopLogger, fx.Invoke(fx.Annotate(func(v *thing) { a = v }, fx.ParamTags(`name:"a"`))), modules.Assemble(bad))
	if tenancy.CodeOf(app.Err()) != tenancy.CodeWiringInvalid || a != nil {
		t.Fatalf("invoke before the refused module: %v", app.Err())
	}
}

// codedErrors is every *tenancy.Error in err's tree.
func codedErrors(err error) []*tenancy.Error {
	var out []*tenancy.Error
	switch u := err.(type) {
	case *tenancy.Error:
		return []*tenancy.Error{u}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			out = append(out, codedErrors(inner)...)
		}
	case interface{ Unwrap() error }:
		out = codedErrors(u.Unwrap())
	}
	return out
}
