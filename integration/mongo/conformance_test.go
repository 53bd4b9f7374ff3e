package mongo_test

import (
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/floors"
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
		switch kind {
		case "document":
			var docs *mongo.Documents[item]
			wire(t, tr, mongo.Document[item]("items", tr.cfg("items")), fx.Populate(&docs))
			return docProbe(t, docs), nil
		case "search":
			var s *mongo.Search
			wire(t, tr, mongo.SearchRoute("find", tr.cfg("find")), named("find", &s))
			return searchProbe(t, s), nil
		case "counter":
			var c *mongo.Counter
			wire(t, tr, mongo.CounterRoute("hits", tr.cfg("hits")), named("hits", &c))
			return counterProbe(c), nil
		case "outbox":
			var o *mongo.Outbox
			wire(t, tr, mongo.OutboxRoute("events", tr.cfg("events")), named("events", &o))
			return outboxProbe(t, o), nil
		case "raw_filter":
			var r *mongo.RawFilter
			wire(t, tr, mongo.RawFilterRoute("raw", tr.cfg("raw")), named("raw", &r))
			return rawProbe(r), nil
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
