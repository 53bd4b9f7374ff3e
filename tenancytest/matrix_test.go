package tenancytest_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type (
	order struct{ Item string }
	cart  struct{ Items []string }
)

// within runs fn on its own goroutine with a recording TB, so that a
// Fatalf stops fn and is returned instead of failing the test.
func within(t *testing.T, fn func(testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r.failed
}

// shop is an app with no declared floor: only the golden file notices
// when a route's isolation drops, since no floor refuses it.
func shop(tenantAware bool, extra ...memory.Option) fx.Option {
	opts := append([]memory.Option{
		memory.Document[order]("orders", memory.DocumentConfig{TenantAware: tenantAware, Read: naming.Shared("orders")}),
		memory.CacheRoute("sessions", memory.CacheConfig{Keys: naming.PerTenant("sessions")}),
	}, extra...)
	return memory.Module("shop", opts...)
}

func writeGolden(t *testing.T, opts ...fx.Option) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "testdata", "tenancy.golden")
	if err := flag.Set("tenancy.update", "true"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = flag.Set("tenancy.update", "false") }()
	tenancytest.RequireMatrix(t, path, opts...)
	return path
}

func TestRequireMatrixUpdateThenMatch(t *testing.T) {
	path := writeGolden(t, shop(true))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"shop    orders    memory   document  tagged     structured  none   ok",
		"shop    sessions  memory   cache     namespace  structured  none   ok",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("golden file lacks %q:\n%s", want, b)
		}
	}
	if failed := within(t, func(tb testing.TB) { tenancytest.RequireMatrix(tb, path, shop(true)) }); len(failed) > 0 {
		t.Fatalf("the app that wrote the golden file does not match it: %v", failed)
	}
}

func TestRequireMatrixNamesAWeakenedRoute(t *testing.T) {
	path := writeGolden(t, shop(true))
	failed := within(t, func(tb testing.TB) { tenancytest.RequireMatrix(tb, path, shop(false)) })
	if len(failed) != 1 {
		t.Fatalf("TenantAware removed, and RequireMatrix did not fail once: %v", failed)
	}
	if !strings.Contains(failed[0], "~ shop/orders: reached tagged -> none") || strings.Contains(failed[0], "sessions") {
		t.Fatalf("diff does not name only the weakened route:\n%s", failed[0])
	}
}

func TestRequireMatrixNamesVerdictAndRouteChanges(t *testing.T) {
	path := writeGolden(t, shop(true))
	// A floor now refuses orders; sessions is gone and carts is new.
	weaker := memory.Module("shop",
		modules.RequiredIsolation(tenancy.Namespace),
		memory.Document[order]("orders", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")}),
		memory.Document[cart]("carts", memory.DocumentConfig{Read: naming.PerTenant("carts")}),
	)
	failed := within(t, func(tb testing.TB) { tenancytest.RequireMatrix(tb, path, weaker) })
	if len(failed) != 1 {
		t.Fatalf("failures %v", failed)
	}
	for _, want := range []string{
		"~ shop/orders: floor none -> namespace, verdict ok -> memory_tenancy_validation_failed",
		"- shop/sessions: route gone",
		"+ shop/carts: new route (backend memory, kind document, reached namespace",
	} {
		if !strings.Contains(failed[0], want) {
			t.Errorf("diff lacks %q:\n%s", want, failed[0])
		}
	}
}

func TestRequireMatrixWithoutGoldenSaysHowToWriteIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.golden")
	failed := within(t, func(tb testing.TB) { tenancytest.RequireMatrix(tb, path, shop(true)) })
	if len(failed) != 1 || !strings.Contains(failed[0], "-tenancy.update") {
		t.Fatalf("failures %v", failed)
	}
}

func TestRequireMatrixRejectsAMangledGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.golden")
	if err := os.WriteFile(path, []byte("shop orders memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	failed := within(t, func(tb testing.TB) { tenancytest.RequireMatrix(tb, path, shop(true)) })
	if len(failed) != 1 || !strings.Contains(failed[0], "line 1: 3 columns") {
		t.Fatalf("failures %v", failed)
	}
}

func TestRequireMatrixFailsWhenFxStopsFirst(t *testing.T) {
	path := writeGolden(t, shop(true))
	failed := within(t, func(tb testing.TB) {
		tenancytest.RequireMatrix(tb, path, shop(true), fx.Provide(func() int { return 1 }), fx.Provide(func() int { return 2 }))
	})
	if len(failed) != 1 || !strings.Contains(failed[0], "fx stopped before the wiring could be read") {
		t.Fatalf("failures %v", failed)
	}
}

func TestRequireRefusedRouteMatchesTheRoute(t *testing.T) {
	refused := memory.Module("shop",
		modules.RequiredIsolation(tenancy.Namespace),
		memory.Document[order]("orders", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")}),
		memory.Document[cart]("carts", memory.DocumentConfig{Read: naming.PerTenant("carts")}),
	)
	e := tenancytest.RequireRefusedRoute(t, "memory_tenancy_validation_failed", "shop", "orders", refused)
	if e.Route != "orders" || e.Required != tenancy.Namespace {
		t.Fatalf("error %+v", e)
	}
	// carts wires: the same code on another route must not pass for it.
	failed := within(t, func(tb testing.TB) {
		tenancytest.RequireRefusedRoute(tb, "memory_tenancy_validation_failed", "shop", "carts", refused)
	})
	if len(failed) != 1 || !strings.Contains(failed[0], "not route shop/carts") {
		t.Fatalf("failures %v", failed)
	}
}

// A test package's own -update flag (the usual golden-file convention)
// coexists with tenancytest's, and rewrites the matrix too.
var pkgUpdate = flag.Bool("update", false, "rewrite golden files")

func TestRequireMatrixHonoursThePackagesUpdateFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tenancy.golden")
	*pkgUpdate = true
	tenancytest.RequireMatrix(t, path, shop(true))
	*pkgUpdate = false
	if failed := within(t, func(tb testing.TB) { tenancytest.RequireMatrix(tb, path, shop(true)) }); len(failed) > 0 {
		t.Fatalf("-update did not write the golden file: %v", failed)
	}
}
