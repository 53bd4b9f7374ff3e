package filekv_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/examples/filekv/filekv"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestConformance: every cell filekv's rules reach (kv at tagged and at
// namespace) passes the kit's boundary probe, fails closed and refuses a
// suspended tenant until it is resumed.
func TestConformance(t *testing.T) {
	tenancytest.Conformance(t, filekv.Rules(), func(t *testing.T, kind floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		if kind != "kv" {
			return tenancytest.Probe{}, tenancytest.ErrNotCovered
		}
		cfg := filekv.KVConfig{TenantAware: true, Keys: filekv.Shared("probe")}
		if tier == tenancy.Namespace {
			cfg = filekv.KVConfig{Keys: filekv.PerTenant("probe")}
		}
		susp := &modules.Suspensions{}
		kv := start(t, filekv.Module("files", filekv.Dir(t.TempDir()), modules.RequiredIsolation(tier), filekv.KV("probe", cfg)), fx.Supply(susp))
		return tenancytest.Probe{
			Suspensions: susp,
			Write:       func(ctx context.Context) error { return kv.Put(ctx, "k", []byte("a")) },
			Read: func(ctx context.Context) (bool, error) {
				_, ok, err := kv.Get(ctx, "k")
				return ok, err
			},
			Intact: func(ctx context.Context) (bool, error) {
				v, ok, err := kv.Get(ctx, "k")
				return ok && string(v) == "a", err
			},
			List:     kv.Keys,
			RecordID: "k",
			Delete: func(ctx context.Context) error {
				if ok, err := kv.Delete(ctx, "k"); err != nil || !ok {
					return errors.Join(err, errors.New("not found"))
				}
				return nil
			},
		}, nil
	})
}

func start(t *testing.T, mod fx.Option, extra ...fx.Option) *filekv.Store {
	t.Helper()
	var kv *filekv.Store
	app := fx.New(fx.NopLogger, mod, fx.Options(extra...), fx.Invoke(fx.Annotate(func(s *filekv.Store) { kv = s }, fx.ParamTags(`name:"probe"`))))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return kv
}

// TestDryRunMatrix: the dry run rates each route from its wiring, refuses
// what misses the floor or the ceiling and a module with no directory,
// and names each refusal's fix.
func TestDryRunMatrix(t *testing.T) {
	rep, err := modules.DryRun(filekv.Module("files", filekv.Dir(t.TempDir()),
		filekv.KV("carts", filekv.KVConfig{TenantAware: true, Keys: filekv.Shared("carts")}),
		filekv.KV("profiles", filekv.KVConfig{Keys: filekv.PerTenant("profiles")}),
		filekv.KV("flags", filekv.KVConfig{Keys: filekv.Shared("flags")})))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Matrix.Rows {
		got = append(got, r.Route+"="+r.Reached.String())
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"carts=tagged", "flags=none", "profiles=namespace"}) {
		t.Fatalf("matrix %v", got)
	}
	for _, c := range []struct {
		opts []filekv.Option
		code tenancy.Code
	}{
		{[]filekv.Option{filekv.Dir("x"), modules.RequiredIsolation(tenancy.Namespace), filekv.KV("carts", filekv.KVConfig{TenantAware: true, Keys: filekv.Shared("carts")})}, "filekv_tenancy_validation_failed"},
		{[]filekv.Option{filekv.Dir("x"), modules.RequiredIsolation(tenancy.Dedicated), filekv.KV("p", filekv.KVConfig{Keys: filekv.PerTenant("p")})}, "filekv_tenancy_validation_failed"},
		{[]filekv.Option{filekv.KV("p", filekv.KVConfig{Keys: filekv.PerTenant("p")})}, tenancy.CodeWiringInvalid},
		{[]filekv.Option{filekv.Dir("x"), filekv.KV("p", filekv.KVConfig{Keys: filekv.PerTenant("../p")})}, tenancy.CodeWiringInvalid},
	} {
		_, err := modules.DryRun(filekv.Module("files", c.opts...))
		var e *tenancy.Error
		if !errors.As(err, &e) || e.Code != c.code || e.Fix == "" {
			t.Errorf("%d options: %v, want %s", len(c.opts), err, c.code)
		}
	}
}
