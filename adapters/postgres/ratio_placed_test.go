package postgres_test

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

const placedStep = 10

// TestRatioPlacements: P13, the placement lookup of a module with
// Placements against today's fixed-tier route, each tenant at one
// placement read by the same point read: A tagged, B namespace, C
// dedicated. The baseline is the placement's own route object, the one
// the placed route picks per call: the same pool, the same tables and
// the same rows, so the pair differs by the lookup alone.
//
// The lookup is some 60 ns of a 50–85 µs read, far below the machine's
// drift from one round to the next, so the sides alternate every
// placedStep reads rather than every round.
func TestRatioPlacements(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	p := newPlacedApp(t)
	for _, c := range []struct {
		name   string
		tenant tenancy.ID
		at     tenancy.Tier
	}{{"pg-placed-tagged-get", tenancytest.TenantA, tenancy.Tagged}, {"pg-placed-namespace-get", tenancytest.TenantB, tenancy.Namespace}, {"pg-placed-dedicated-get", tenancytest.TenantC, tenancy.Dedicated}} {
		ctx := tenancy.WithTenant(context.Background(), c.tenant)
		must0(t, seed(ctx, p.docs))
		// Each side walks the keys on from call to call: a stepped round
		// calls it for a few reads at a time.
		read := func(d *postgres.Documents[item]) func(int) {
			next := ratio.Cycle(seeded)
			return func(n int) {
				for range n {
					if _, err := d.Get(ctx, key(next())); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		ratio.Report(t, ratio.Pair{Label: "P13", Name: c.name, Iterations: ratioIters, Rounds: ratioRounds, Step: placedStep,
			Ours: read(p.docs), Baseline: read(p.at[c.at])}, 1.03)
	}
}

// TestRatioPlacementsRouted: P13 on the P4 pair's shape, 20 warm tenants
// each placed dedicated on a database of its own, read in turn through
// the placed route and through its dedicated placement's route object.
func TestRatioPlacementsRouted(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	const tenants = 20
	site := newPlacedSiteMore(t, false, tenants)
	p := site.start(t, modules.Lifecycle())
	ctxs := make([]context.Context, tenants)
	for i, id := range site.more {
		p.tenants.Place(id, "orders", tenancy.Dedicated)
		if _, err := p.tenants.Provision(context.Background(), id); err != nil {
			t.Fatalf("provisioning %s: %v", id, err)
		}
		ctxs[i] = tenancy.WithTenant(context.Background(), id)
		must0(t, seed(ctxs[i], p.docs)) // warms every tenant's pool too
	}
	read := func(d *postgres.Documents[item]) func(int) {
		tenant, k := ratio.Cycle(tenants), ratio.Cycle(seeded)
		return func(n int) {
			for range n {
				if _, err := d.Get(ctxs[tenant()], key(k())); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	ratio.Report(t, ratio.Pair{Label: "P13", Name: "pg-placed-dedicated-20-get", Iterations: ratioIters, Rounds: ratioRounds, Step: placedStep,
		Ours: read(p.docs), Baseline: read(p.at[tenancy.Dedicated])}, 1.03)
}
