package tenancytest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Cells lists what Conformance probes for a backend: every route kind at
// every tier its rules let it reach. The memory backend's ceiling is
// namespace, so it has no dedicated cell.
func ExampleCells() {
	for _, c := range tenancytest.Cells(memory.Rules) {
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
	tenancytest.Conformance(t, memory.Rules, func(t *testing.T, kind floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		// tagged: one shared container, tenant-aware; namespace: one per tenant.
		aware, where := true, memory.Static("probe")
		if tier == tenancy.Namespace {
			aware, where = false, memory.PerTenant("probe")
		}
		var (
			kv    *memory.KV
			docs  *memory.Documents[string]
			st    *memory.Streams
			route memory.Option
			out   any
		)
		switch kind {
		case "cache":
			route, out = memory.Cache("probe", memory.CacheConfig{TenantAware: aware, Keys: where}), &kv
		case "document":
			route, out = memory.Document[string]("probe", memory.DocumentConfig{TenantAware: aware, Read: where}), &docs
		case "stream":
			route, out = memory.Stream("probe", memory.StreamConfig{TenantAware: aware, Stream: where}), &st
		default:
			return tenancytest.Probe{}, tenancytest.ErrNotCovered
		}
		if err := fx.New(fx.NopLogger, fx.Populate(out),
			memory.Module("probe", memory.RequiredIsolation(tier), route)).Err(); err != nil {
			return tenancytest.Probe{}, err
		}
		switch kind {
		case "cache":
			return tenancytest.Probe{
				Write: func(ctx context.Context) error { return kv.Set(ctx, "k", []byte("v"), 0) },
				Read:  func(ctx context.Context) (bool, error) { _, ok, err := kv.Get(ctx, "k"); return ok, err },
			}, nil
		case "document":
			return tenancytest.Probe{
				Write: func(ctx context.Context) error { _, err := docs.Create(ctx, "d", "v"); return err },
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
			Write: func(ctx context.Context) error { _, err := st.Append(ctx, []byte("v")); return err },
			Read:  func(ctx context.Context) (bool, error) { m, err := st.Read(ctx, 0, 0); return len(m) > 0, err },
		}, nil
	})
}
