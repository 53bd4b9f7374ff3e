package tenancytest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Cells lists what Conformance probes for a backend: every route kind at
// every tier its rules let it reach. The memory backend's ceiling is
// namespace, so it has no dedicated cell.
func ExampleCells() {
	for _, c := range tenancytest.Cells(memory.Rules()) {
		fmt.Println(c)
	}
	// Output:
	// cache/tagged
	// cache/namespace
	// document/tagged
	// document/namespace
	// stream/tagged
	// stream/namespace
}

// A backend's test suite runs the kit over its Rules with a factory that
// wires one route of each kind at each tier, under that tier as the
// module's floor (so fx.New proves the route reaches it), and returns the
// probe of its operations. A cell the factory does not cover fails the
// run. adapters/memory's TestConformance runs this factory's full form.
func ExampleConformance() {
	var t *testing.T // the *testing.T of a TestConformance function
	tenancytest.Conformance(t, memory.Rules(), func(t *testing.T, kind floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		// tagged: one shared container, tenant-aware; namespace: one per tenant.
		aware, where := true, naming.Shared("probe")
		if tier == tenancy.Namespace {
			aware, where = false, naming.PerTenant("probe")
		}
		var (
			kv    *memory.Cache
			docs  *memory.Documents[string]
			st    *memory.Stream
			route memory.Option
			out   any
		)
		switch kind {
		case "cache":
			route, out = memory.CacheRoute("probe", memory.CacheConfig{TenantAware: aware, Keys: where}), &kv
		case "document":
			route, out = memory.Document[string]("probe", memory.DocumentConfig{TenantAware: aware, Read: where}), &docs
		case "stream":
			route, out = memory.StreamRoute("probe", memory.StreamConfig{TenantAware: aware, Stream: where}), &st
		default:
			return tenancytest.Probe{}, tenancytest.ErrNotCovered
		}
		// The app's suspended set: the kit suspends A through it.
		susp := &modules.Suspensions{}
		if err := fx.New(fx.NopLogger, fx.Populate(out), fx.Supply(susp),
			memory.Module("probe", modules.RequiredIsolation(tier), route)).Err(); err != nil {
			return tenancytest.Probe{}, err
		}
		switch kind {
		case "cache":
			return tenancytest.Probe{
				Suspensions: susp,
				Write:       func(ctx context.Context) error { return kv.Set(ctx, "k", []byte("v"), 0) },
				Read:        func(ctx context.Context) (bool, error) { _, ok, err := kv.Get(ctx, "k"); return ok, err },
			}, nil
		case "document":
			return tenancytest.Probe{
				Suspensions: susp,
				Write:       func(ctx context.Context) error { _, err := docs.Create(ctx, "d", "v"); return err },
				Read: func(ctx context.Context) (bool, error) {
					_, err := docs.Get(ctx, "d")
					if errors.Is(err, document.ErrNotFound) {
						return false, nil
					}
					return err == nil, err
				},
			}, nil
		}
		return tenancytest.Probe{
			Suspensions: susp,
			Write:       func(ctx context.Context) error { _, err := st.Append(ctx, []byte("v")); return err },
			Read:        func(ctx context.Context) (bool, error) { m, err := st.Read(ctx, 0, 0); return len(m) > 0, err },
		}, nil
	})
}

// printer is a testing.TB that prints failures, so the examples run
// outside a test. In a test, pass the test's *testing.T instead.
type printer struct {
	testing.TB
	failed   bool
	cleanups []func()
}

func (p *printer) Helper()             {}
func (p *printer) Cleanup(f func())    { p.cleanups = append(p.cleanups, f) }
func (p *printer) Failed() bool        { return p.failed }
func (p *printer) Logf(string, ...any) {}
func (p *printer) Errorf(format string, args ...any) {
	p.failed = true
	fmt.Printf("FAIL: "+format+"\n", args...)
}
func (p *printer) Error(args ...any) { p.Errorf("%s", fmt.Sprint(args...)) }
func (p *printer) Fatalf(format string, args ...any) {
	p.Errorf(format, args...)
	runtime.Goexit()
}
func (p *printer) Fatal(args ...any) { p.Fatalf("%s", fmt.Sprint(args...)) }

// check runs fn as a test body would run: a Fatalf ends it.
func check(fn func(testing.TB)) bool {
	p := &printer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(p)
	}()
	<-done
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
	return !p.failed
}

type Order struct{ Item string }

func shopApp(tenantAware bool) fx.Option {
	return memory.Module("shop",
		memory.Document[Order]("orders", memory.DocumentConfig{TenantAware: tenantAware, Read: naming.Shared("orders")}),
	)
}

// RequireMatrix pins the app's tenancy matrix to a golden file, one line
// per route. Here testdata/example.golden says orders reaches tagged; a change that drops TenantAware
// from the route (it now reaches none, and no floor refuses it) fails the
// test with a diff naming the route. `go test -run TestX -tenancy.update`
// writes the file after an intended change.
func ExampleRequireMatrix() {
	const golden = "testdata/example.golden" // orders: tagged, ok
	fmt.Println("as pinned:", check(func(t testing.TB) {
		tenancytest.RequireMatrix(t, golden, shopApp(true))
	}))
	fmt.Println("weakened:", check(func(t testing.TB) {
		tenancytest.RequireMatrix(t, golden, shopApp(false))
	}))
	// Output:
	// as pinned: true
	// FAIL: tenancy matrix differs from testdata/example.golden (- golden, + now); if the change is intended, rerun with -tenancy.update:
	// ~ shop/orders: reached tagged -> none
	// weakened: false
}

// RequireRefusedRoute asserts that one route is refused with one code, and
// returns the error for its fields.
func ExampleRequireRefusedRoute() {
	check(func(t testing.TB) {
		e := tenancytest.RequireRefusedRoute(t, "memory_tenancy_validation_failed", "shop", "orders",
			memory.Module("shop",
				modules.RequiredIsolation(tenancy.Namespace),
				memory.Document[Order]("orders", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")}),
			))
		fmt.Println(e.Route, e.Reached, "<", e.Required)
		fmt.Println("fix:", e.Fix)
	})
	// Output:
	// orders tagged < namespace
	// fix: give a per-tenant resolver to every relation the route names (static now: read (orders), write (orders))
}

// Boundary writes under tenant A, proves A reads its own write, then
// reads, lists, counts, updates and deletes under tenant B, and fails the
// test if B sees or changes anything of A's.
func ExampleBoundary() {
	var orders *memory.Documents[Order]
	if err := fx.New(fx.NopLogger, shopApp(true), fx.Populate(&orders)).Err(); err != nil {
		fmt.Println(err)
		return
	}
	probe := tenancytest.Probe{
		Write: func(ctx context.Context) error { _, err := orders.Create(ctx, "o-1", Order{Item: "anvil"}); return err },
		Read: func(ctx context.Context) (bool, error) {
			_, err := orders.Get(ctx, "o-1")
			if errors.Is(err, document.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
		RecordID: "o-1",
		List: func(ctx context.Context) ([]string, error) {
			recs, err := orders.List(ctx, document.Query{})
			ids := make([]string, len(recs))
			for i, r := range recs {
				ids[i] = r.ID
			}
			return ids, err
		},
		Count: func(ctx context.Context) (int, error) { return orders.Count(ctx, document.Query{}) },
		Update: func(ctx context.Context) error {
			_, err := orders.Update(ctx, "o-1", Order{Item: "hammer"}, 1)
			return err
		},
		Delete: func(ctx context.Context) error { return orders.Delete(ctx, "o-1") },
	}
	fmt.Println("boundary holds:", check(func(t testing.TB) { tenancytest.Boundary(t, probe) }))
	// Output:
	// boundary holds: true
}
