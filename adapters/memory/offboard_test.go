package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type offboardRoutes struct {
	fx.In
	Tenants *modules.Tenants
	Docs    *memory.Documents[order]
	Cache   *memory.Cache
	Stream  *memory.Stream
}

func offboardApp(t *testing.T, opts ...memory.Option) offboardRoutes {
	t.Helper()
	var r offboardRoutes
	opts = append(opts,
		memory.Document[order]("orders", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")}),
		memory.CacheRoute("carts", memory.CacheConfig{Keys: naming.PerTenant("carts")}),
		memory.StreamRoute("events", memory.StreamConfig{TenantAware: true, Stream: naming.Shared("events")}))
	app := fx.New(fx.NopLogger, modules.Lifecycle(), memory.Module("shop", opts...), fx.Populate(&r))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOffboardDropsTheTenantsRecords: offboarding drops the tenant's
// tagged documents, its per-tenant cache container and its stream
// messages; the other tenant's stay, and the shared stream's offsets hold.
func TestOffboardDropsTheTenantsRecords(t *testing.T) {
	r := offboardApp(t, modules.AllowTeardown())
	a, b := tenancytest.TenantA, tenancytest.TenantB
	for _, id := range []tenancy.ID{a, b} {
		ctx := tenancy.WithTenant(context.Background(), id)
		if _, err := r.Docs.Create(ctx, "o1", order{Item: "anvil"}); err != nil {
			t.Fatal(err)
		}
		if err := r.Cache.Set(ctx, "k", []byte("v"), time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Stream.Append(ctx, []byte("e")); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // a rerun is a no-op
		if rep, err := r.Tenants.Offboard(context.Background(), a); err != nil || len(rep) != 1 || rep[0].Skipped != "" {
			t.Fatalf("offboard: %+v %v", rep, err)
		}
	}
	r.Tenants.Resume(a) // to read through the routes
	ca, cb := tenancy.WithTenant(context.Background(), a), tenancy.WithTenant(context.Background(), b)
	if n, err := r.Docs.Count(ca, document.Query{}); err != nil || n != 0 {
		t.Errorf("A's documents after offboarding: %d %v", n, err)
	}
	if _, ok, err := r.Cache.Get(ca, "k"); err != nil || ok {
		t.Errorf("A's cache entry after offboarding: %v %v", ok, err)
	}
	if msgs, err := r.Stream.Read(ca, 0, 0); err != nil || len(msgs) != 0 {
		t.Errorf("A's messages after offboarding: %v %v", msgs, err)
	}
	if n, err := r.Docs.Count(cb, document.Query{}); err != nil || n != 1 {
		t.Errorf("B's documents: %d %v", n, err)
	}
	if _, ok, err := r.Cache.Get(cb, "k"); err != nil || !ok {
		t.Errorf("B's cache entry: %v %v", ok, err)
	}
	if msgs, err := r.Stream.Read(cb, 0, 0); err != nil || len(msgs) != 1 || msgs[0].Offset != 2 {
		t.Errorf("B's messages: %+v %v", msgs, err)
	}
	if off, err := r.Stream.Append(cb, []byte("f")); err != nil || off != 3 {
		t.Errorf("next offset after offboarding: %d %v, want 3", off, err)
	}
}

// TestOffboardNeedsAllowTeardown: without AllowTeardown offboarding
// refuses and the records stay.
func TestOffboardNeedsAllowTeardown(t *testing.T) {
	r := offboardApp(t)
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := r.Docs.Create(ctx, "o1", order{Item: "anvil"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Tenants.Offboard(context.Background(), tenancytest.TenantA); !errors.Is(err, migrate.ErrTeardownDisabled) {
		t.Fatalf("offboard without AllowTeardown: %v", err)
	}
	r.Tenants.Resume(tenancytest.TenantA)
	if n, err := r.Docs.Count(ctx, document.Query{}); err != nil || n != 1 {
		t.Errorf("documents after a refused offboarding: %d %v", n, err)
	}
}

// TestOffboardReportsTheVerifiedFamilies: Offboard's line for the module
// names every family its verifier checked, with nothing left.
func TestOffboardReportsTheVerifiedFamilies(t *testing.T) {
	r := offboardApp(t, modules.AllowTeardown())
	a := tenancytest.FreshTenant(t)
	ctx := tenancy.WithTenant(context.Background(), a)
	if _, err := r.Docs.Create(ctx, "o1", order{Item: "anvil"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Cache.Set(ctx, "k", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Tenants.Offboard(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep) != 1 || len(rep[0].Checked) != 3 || len(rep[0].Left) != 0 {
		t.Fatalf("report: %+v", rep)
	}
}
