package mongo

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

var sinkFilter bson.D

// TestRatioP11Off: P11, what telemetry costs a MongoDB route call when the
// app gives no provider: the route's entry (a nil check, then the entry)
// against the entry it wraps, called directly, each followed by the same
// find filter and release, on a collection per tenant and on a tagged
// shared collection. The entry is unexported, so the pair runs here, with
// no server (the client never dials): the find's round trip, which both
// sides would share, is left out, so the nil check is measured against the
// call's in-process part alone. The with-provider pair is TestRatioP11On
// in integration/mongo.
func TestRatioP11Off(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	ctx := tenancy.WithTenant(context.Background(), tenantA)
	for _, c := range []struct {
		name string
		cfg  RouteConfig
	}{
		{"mongo-per-tenant-collection-otel-off", RouteConfig{Collection: naming.PerTenant("items")}},
		{"mongo-tagged-otel-off", RouteConfig{TenantAware: true, Collection: naming.Shared("items")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := testRoute(t, c.cfg)
			if r.tel != nil {
				t.Fatal("a route of an app without telemetry holds instruments")
			}
			find := func(entry func(context.Context) (target, error)) func(int) {
				return func(n int) {
					for range n {
						tg, err := entry(ctx)
						if err != nil {
							t.Fatal(err)
						}
						sinkFilter = tg.byID("k")
						tg.release()
					}
				}
			}
			ratio.Report(t, ratio.Pair{Label: "P11", Name: c.name, Ours: find(r.target), Baseline: find(r.enter), Rounds: 31, Iterations: 20000}, 1.01)
		})
	}
}
