package mongo

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestTargetWithoutTelemetryAllocatesNothingMore: in an app that gives no
// telemetry a call's entry costs the nil check and no allocation: a tagged
// route's entry allocates nothing, and a per-tenant collection's exactly
// what the resolution did before telemetry (the collection's name and
// handle).
func TestTargetWithoutTelemetryAllocatesNothingMore(t *testing.T) {
	ctx := tenancy.WithTenant(context.Background(), tenantA)
	for _, c := range []struct {
		name string
		cfg  RouteConfig
	}{
		{"tagged", RouteConfig{TenantAware: true, Collection: naming.Shared("items")}},
		{"per-tenant collection", RouteConfig{Collection: naming.PerTenant("items")}},
	} {
		r := testRoute(t, c.cfg)
		if r.tel != nil {
			t.Fatalf("%s: a route of an app without telemetry holds instruments", c.name)
		}
		call := func(entry func(context.Context) (context.Context, target, error)) func() {
			return func() {
				_, tg, err := entry(ctx)
				if err != nil {
					t.Fatal(err)
				}
				tg.release()
			}
		}
		traced, plain := leastAllocs(call(r.target)), leastAllocs(call(r.untraced))
		if traced != plain {
			t.Errorf("%s: the entry allocates %v times per call without telemetry, the resolution before telemetry %v", c.name, traced, plain)
		}
		if c.cfg.TenantAware && traced != 0 {
			t.Errorf("%s: the entry allocates %v times per call without telemetry, want 0", c.name, traced)
		}
	}
}
