package modules

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/tenancy"
)

var benchBackend = floors.Backend{Name: "bench", Ceiling: tenancy.Dedicated, Kinds: map[floors.Kind]floors.KindRule{
	"document": {Relations: []string{"read", "write"}},
}}

// benchModules is the number of fx modules the routes are spread over. It
// is fixed so that the pair measures routes: fx's own cost grows faster
// than linearly in the number of fx.Module scopes (measured here: 100
// empty modules 5ms, 1,000 modules 180ms, with no tenantwire code at all).
const benchModules = 20

// benchRoute stands for a route object an adapter provides.
type benchRoute struct{ name string }

// benchApp spreads routes over benchModules modules, each route providing
// its route object as adapters do. With enforcement, each module adds what
// Provide makes; without, the same wiring values are provided and consumed
// by one plain invoke, so the graph differs only by the check.
func benchApp(routes int, enforce, routeObjects bool) []fx.Option {
	opts := []fx.Option{fx.NopLogger}
	for m := range benchModules {
		mod := floors.Module{Name: fmt.Sprintf("m%d", m), Backend: benchBackend, Floor: tenancy.Namespace}
		var parts []fx.Option
		for r := range routes / benchModules {
			name := fmt.Sprintf("r%d", r)
			mod.Routes = append(mod.Routes, floors.Route{Name: name, Kind: "document",
				Relations: []floors.Relation{{Role: "read", PerTenant: true}, {Role: "write", PerTenant: true}}})
			if routeObjects {
				parts = append(parts, fx.Provide(fx.Annotate(func() *benchRoute { return &benchRoute{name} },
					fx.ResultTags(`name:"`+mod.Name+"."+name+`"`))))
			}
		}
		if enforce {
			parts = append(parts, Provide(mod))
		} else {
			parts = append(parts, fx.Provide(fx.Annotate(func() *Wiring { return &Wiring{Module: mod} }, fx.ResultTags(wiringGroup))))
		}
		opts = append(opts, fx.Module(mod.Name, parts...))
	}
	if !enforce {
		opts = append(opts, fx.Invoke(func(l Live) { _ = len(l.Wirings) }))
	}
	return opts
}

func newApps(t testing.TB, routes int, enforce, routeObjects bool) func(int) {
	opts := benchApp(routes, enforce, routeObjects)
	return func(n int) {
		for range n {
			if err := fx.New(opts...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRatioP8 is the P8 pair: fx.New with enforcement over 1,000 routes
// against the same graph without it, and how the enforced build scales from
// 1,000 to 10,000 routes. The scale pair leaves out the route objects:
// fx's own cost per provided value grows faster than linearly, and that
// pair measures what enforcement adds.
func TestRatioP8(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	ratio.Report(t, ratio.Pair{Label: "P8", Name: "fx-new-1000-routes",
		Ours: newApps(t, 1000, true, true), Baseline: newApps(t, 1000, false, true), Iterations: 10, Rounds: 9}, 1.10)
	ratio.Report(t, ratio.Pair{Label: "P8", Name: "fx-new-10000-over-1000-routes",
		Ours: newApps(t, 10000, true, false), Baseline: newApps(t, 1000, true, false), Iterations: 3, Rounds: 5}, 12)
}

// TestEnforcementScales guards the check's own cost (not fx's): checking
// 10,000 routes must stay close to linear in 1,000. Counting work, not
// timing it, would need instrumentation; the bound here is deliberately
// loose so that only a quadratic regression trips it.
func TestEnforcementScales(t *testing.T) {
	check := func(routes int) time.Duration {
		var mods []floors.Module
		for m := range routes / 10 {
			mod := floors.Module{Name: fmt.Sprintf("m%d", m), Backend: benchBackend, Floor: tenancy.Namespace}
			for r := range 10 {
				mod.Routes = append(mod.Routes, floors.Route{Name: fmt.Sprintf("r%d", r), Kind: "document"})
			}
			mods = append(mods, mod)
		}
		start := time.Now()
		if rep := floors.Check(mods, nil); rep.OK() {
			t.Fatal("static routes under a namespace floor were accepted")
		}
		return time.Since(start)
	}
	check(1000)
	small, big := check(1000), check(10000)
	if big > 100*small+50*time.Millisecond {
		t.Fatalf("checking 10,000 routes took %v, 1,000 took %v: worse than linear", big, small)
	}
}
