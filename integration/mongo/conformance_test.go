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
		susp := &modules.Suspensions{}
		switch kind {
		case "document":
			var docs *mongo.Documents[item]
			wire(t, tr, mongo.Document[item]("items", tr.cfg("items")), fx.Options(fx.Populate(&docs), fx.Supply(susp)))
			return suspendable(docProbe(t, docs), susp), nil
		case "search":
			var s *mongo.Search
			wire(t, tr, mongo.SearchRoute("find", tr.cfg("find")), fx.Options(named("find", &s), fx.Supply(susp)))
			return suspendable(searchProbe(t, s), susp), nil
		case "counter":
			var c *mongo.Counter
			wire(t, tr, mongo.CounterRoute("hits", tr.cfg("hits")), fx.Options(named("hits", &c), fx.Supply(susp)))
			return suspendable(counterProbe(c), susp), nil
		case "outbox":
			var o *mongo.Outbox
			wire(t, tr, mongo.OutboxRoute("events", tr.cfg("events")), fx.Options(named("events", &o), fx.Supply(susp)))
			return suspendable(outboxProbe(t, o), susp), nil
		case "raw_filter":
			var r *mongo.RawFilter
			wire(t, tr, mongo.RawFilterRoute("raw", tr.cfg("raw")), fx.Options(named("raw", &r), fx.Supply(susp)))
			return suspendable(rawProbe(r), susp), nil
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

// suspendable is p checked against the cell app's suspended set too.
func suspendable(p tenancytest.Probe, s *modules.Suspensions) tenancytest.Probe {
	p.Suspensions = s
	return p
}
