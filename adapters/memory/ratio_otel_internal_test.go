package memory

import (
	"context"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioP11Off: P11, what telemetry costs an in-process cache GET when
// the app gives no provider: the route's scope (a nil check, then the
// resolution) against the resolution as it was before telemetry, written
// out here, each followed by the same read. The with-provider pair is in
// tenantotel.
func TestRatioP11Off(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	s := newStore()
	s.module = "p11"
	keys := naming.Shared("sessions")
	c := &Cache{s: s, keys: keys, r: newRouteConfig(s, floors.Route{Name: "session", Kind: "cache", TenantAware: true,
		Relations: []floors.Relation{containerRelation(keys, "keys")}})}
	ctx := tenancy.WithTenant(context.Background(), tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a"))
	if err := c.Set(ctx, "k", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	get := func(scope func(context.Context, naming.Name, string) (string, tenancy.ID, func(), error)) func(int) {
		return func(n int) {
			for range n {
				name, tag, end, err := scope(ctx, keys, "keys")
				if err != nil {
					t.Fatal(err)
				}
				s.mu.RLock()
				_, ok := s.kv[name][entryKey{tenant: tag, key: "k"}]
				s.mu.RUnlock()
				end()
				if !ok {
					t.Fatal("missing")
				}
			}
		}
	}
	ratio.Report(t, ratio.Pair{Label: "P11", Name: "memory-otel-off", Ours: get(c.r.scope), Baseline: get(c.r.untraced), Rounds: 31, Iterations: 20000}, 1.01)
}

// untraced is scope as it was before telemetry: the baseline.
func (r routeConfig) untraced(ctx context.Context, c naming.Name, role string) (string, tenancy.ID, func(), error) {
	if !r.decision.NeedsTenant {
		return containerName(c, tenancy.ID{}), tenancy.ID{}, nop, nil
	}
	id, ok := tenancy.FromContext(ctx)
	if !ok {
		return "", tenancy.ID{}, nil, rules.Unbound(r.module, r.name)
	}
	end, err := r.suspensions.Enter(id, rules.Name, r.module, r.name)
	if err != nil {
		return "", tenancy.ID{}, nil, err
	}
	name := containerName(c, tenancy.ID{})
	if r.decision.ResolvesPerTenant(role) {
		name = containerName(c, id)
	}
	var tag tenancy.ID
	if r.decision.Tagged {
		tag = id
	}
	return name, tag, end, nil
}
