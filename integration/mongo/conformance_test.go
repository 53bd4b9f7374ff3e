package mongo_test

import (
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestConformance probes every (kind, tier) cell of mongo.Rules() on the
// FerretDB servers (or MONGODB_URI): each cell is one route under a module
// whose floor is the cell's tier, wired as the first of tiers that reaches
// it (namespace: a collection per tenant; the database-per-tenant wiring
// is probed by the TestBoundary tests).
func TestConformance(t *testing.T) {
	tenancytest.Conformance(t, mongo.Rules(), func(t *testing.T, kind floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		tr, ok := firstWiring(tier)
		if !ok {
			return tenancytest.Probe{}, tenancytest.ErrNotCovered
		}
		// Every cell offboards A with proof (Erased), the dedicated ones
		// in A's own database on its own server.
		l := lifecycle{offboard: true}
		wire := func(t *testing.T, tr wiring, route mongo.Option, populate fx.Option) {
			t.Helper()
			start(t, modules.Lifecycle(), mongo.Module("m", append(tr.module(t), modules.RequiredIsolation(tr.want), modules.AllowTeardown(), route)...),
				populate, fx.Populate(&l.in))
		}
		switch kind {
		case "document":
			var docs *mongo.Documents[item]
			wire(t, tr, mongo.Document[item]("items", tr.cfg("items")), fx.Options(fx.Populate(&docs)))
			return l.erasable(docProbe(t, docs)), nil
		case "search":
			var s *mongo.Search
			wire(t, tr, mongo.SearchRoute("find", tr.cfg("find")), fx.Options(named("find", &s)))
			return l.erasable(searchProbe(t, s)), nil
		case "counter":
			var c *mongo.Counter
			wire(t, tr, mongo.CounterRoute("hits", tr.cfg("hits")), fx.Options(named("hits", &c)))
			return l.erasable(counterProbe(c)), nil
		case "outbox":
			var o *mongo.Outbox
			wire(t, tr, mongo.OutboxRoute("events", tr.cfg("events")), fx.Options(named("events", &o)))
			return l.erasable(outboxProbe(t, o)), nil
		case "raw_filter":
			var r *mongo.RawFilter
			wire(t, tr, mongo.RawFilterRoute("raw", tr.cfg("raw")), fx.Options(named("raw", &r)))
			return l.erasable(rawProbe(r)), nil
		}
		return tenancytest.Probe{}, tenancytest.ErrNotCovered
	})
}

// firstWiring is the first wiring in tiers that reaches tier.
func firstWiring(want tenancy.Tier) (tier, bool) {
	for _, tr := range tiers {
		if tr.want == want {
			return tr, true
		}
	}
	return tier{}, false
}

// wiring is one of tiers, named apart from the factory's tier argument.
type wiring = tier

// lifecycle is a cell app's: its suspended set and its lifecycle, for the
// suspension and offboarding checks.
type lifecycle struct {
	in struct {
		fx.In
		Tenants     *modules.Tenants
		Suspensions *modules.Suspensions
	}
	offboard bool
}

// erasable is p checked against the cell app's suspensions and, where l
// says so, its offboarding.
func (l *lifecycle) erasable(p tenancytest.Probe) tenancytest.Probe {
	p.Suspensions = l.in.Suspensions
	if l.offboard {
		p.Tenants = l.in.Tenants
	}
	return p
}
