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
// app gives no provider: the route's entry (a nil check, then the
// resolution) against the resolution as it was before telemetry, written
// out below, each followed by the same find filter and release, on a
// collection per tenant and on a tagged shared collection. The entry is
// unexported, so the pair runs here, with no server (the client never
// dials): the find's round trip, which both sides would share, is left
// out, so the nil check is weighed against the call's in-process part
// alone. The with-provider pair is TestRatioP11On in integration/mongo.
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
			find := func(entry func(context.Context) (context.Context, target, error)) func(int) {
				return func(n int) {
					for range n {
						_, tg, err := entry(ctx)
						if err != nil {
							t.Fatal(err)
						}
						sinkFilter = tg.byID("k")
						tg.release()
					}
				}
			}
			ratio.Report(t, ratio.Pair{Label: "P11", Name: c.name, Ours: find(r.target), Baseline: find(r.untraced), Rounds: 31, Iterations: 20000}, 1.01)
		})
	}
}

// untraced is target as it was before telemetry: the baseline.
func (r *route) untraced(ctx context.Context) (context.Context, target, error) {
	if !r.scoped() {
		if r.coll != nil {
			return ctx, target{coll: r.coll, release: noop}, nil
		}
		return ctx, target{coll: r.core.client.Database(r.core.db).Collection(r.spec.coll.name), release: noop}, nil
	}
	id, err := tenancy.Require(ctx)
	if err != nil {
		return ctx, target{}, r.unbound()
	}
	if err := r.core.suspensions.Check(id, rules.Name, r.core.module, r.spec.name); err != nil {
		return ctx, target{}, err
	}
	t, err := r.targetFor(ctx, id)
	if err != nil {
		return ctx, t, err
	}
	if err := r.ensureCurrent(ctx, id, t); err != nil {
		t.release()
		return ctx, target{}, err
	}
	return ctx, t, nil
}
