package memory_test

import (
	"context"
	"errors"
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

// TestConformance probes every (kind, tier) cell of memory.Rules().
func TestConformance(t *testing.T) {
	tenancytest.Conformance(t, memory.Rules(), conformanceRoute)
}

// conformanceRoute builds one route of kind at tier under a module whose
// floor is that tier, so fx.New proves the route reaches it: tagged is a
// tenant-aware shared container, namespace a container per tenant.
func conformanceRoute(t *testing.T, kind floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
	aware, container := tier == tenancy.Tagged, naming.PerTenant("probe")
	if aware {
		container = naming.Shared("probe")
	}
	floor := modules.RequiredIsolation(tier)
	var p tenancytest.Probe
	var r lifecycleRoutes
	switch kind {
	case "document":
		r = buildLifecycle(t, floor, memory.Document[order]("probe", memory.DocumentConfig{TenantAware: aware, Read: container}))
		p = documentProbe(r.Docs)
	case "cache":
		r = buildLifecycle(t, floor, memory.CacheRoute("probe", memory.CacheConfig{TenantAware: aware, Keys: container}))
		p = cacheProbe(r.Cache)
	case "stream":
		r = buildLifecycle(t, floor, memory.StreamRoute("probe", memory.StreamConfig{TenantAware: aware, Stream: container}))
		p = streamProbe(r.St)
	default:
		return tenancytest.Probe{}, tenancytest.ErrNotCovered
	}
	p.Suspensions, p.Tenants = r.Suspensions, r.Tenants
	return p, nil
}

type lifecycleRoutes struct {
	fx.In
	Tenants     *modules.Tenants
	Suspensions *modules.Suspensions
	Docs        *memory.Documents[order] `optional:"true"`
	Cache       *memory.Cache            `optional:"true"`
	St          *memory.Stream           `optional:"true"`
}

// buildLifecycle is a module with AllowTeardown under modules.Lifecycle,
// for the conformance cells' offboarding check.
func buildLifecycle(t *testing.T, opts ...memory.Option) lifecycleRoutes {
	t.Helper()
	var r lifecycleRoutes
	app := fx.New(fx.NopLogger, modules.Lifecycle(), memory.Module("shop", append(opts, modules.AllowTeardown())...), fx.Populate(&r))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

func cacheProbe(kv *memory.Cache) tenancytest.Probe {
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { return kv.Set(ctx, "k", []byte("a"), 0) },
		Read: func(ctx context.Context) (bool, error) {
			_, ok, err := kv.Get(ctx, "k")
			return ok, err
		},
		Intact: func(ctx context.Context) (bool, error) {
			v, ok, err := kv.Get(ctx, "k")
			return ok && string(v) == "a", err
		},
		Delete: func(ctx context.Context) error {
			if ok, err := kv.Delete(ctx, "k"); err != nil || !ok {
				return errors.Join(err, document.ErrNotFound)
			}
			return nil
		},
	}
}

func streamProbe(st *memory.Stream) tenancytest.Probe {
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { _, err := st.Append(ctx, []byte("probe")); return err },
		Read: func(ctx context.Context) (bool, error) {
			msgs, err := st.Read(ctx, 0, 0)
			return len(msgs) > 0, err
		},
	}
}
