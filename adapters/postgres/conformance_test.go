package postgres_test

import (
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestConformance probes every (kind, tier) cell of postgres.Rules() on the
// real server. Each tier is one app holding every kind that reaches it
// (tierRoutes' and the messaging ones), started and provisioned once and
// shared by the tier's cells, each probing tables of its own: DDL and
// CREATE DATABASE are the slow part of the run, not the probes.
func TestConformance(t *testing.T) { conformance(t, direct) }

// TestConformanceThroughPgBouncer probes every cell again with every
// module behind PgBouncer in transaction pooling mode
// (BehindTransactionPooler): plain DSNs and the routed tenants' DSNs name
// the pooler.
func TestConformanceThroughPgBouncer(t *testing.T) { conformance(t, throughPgBouncer) }

func conformance(t *testing.T, v via) {
	core := map[tenancy.Tier]routeSet{}
	msg := map[tenancy.Tier]*messagingSet{}
	susp := map[tenancy.Tier]*modules.Suspensions{}
	dbs := twoDatabasesVia(t, v)
	for _, tier := range tiers {
		ms, opts, targets := messagingRoutes(tier)
		susp[tier] = &modules.Suspensions{}
		targets = append(targets, fx.Supply(susp[tier]))
		core[tier], msg[tier] = tierRoutesOn(t, v, tier, dbs, opts, targets...), ms
	}
	tenancytest.Conformance(t, postgres.Rules(), func(t *testing.T, kind floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		if kind == "sql" {
			return sqlProbe(t, v, tier)
		}
		p, err := conformanceProbe(t, kind, tier, core[tier], msg[tier])
		p.Suspensions = susp[tier]
		return p, err
	})
}

// conformanceProbe is the probe of kind on tier's routes.
func conformanceProbe(t *testing.T, kind floors.Kind, tier tenancy.Tier, rs routeSet, ms *messagingSet) (tenancytest.Probe, error) {
	{
		switch kind {
		case "document":
			return docProbe(t, rs.docs), nil
		case "counter":
			return counterProbe(rs.counter), nil
		case "search":
			return searchProbe(t, rs.search), nil
		case "analytics":
			return analyticsProbe(rs), nil
		case "dynamic_read":
			return dynamicProbe(rs, tier), nil
		case "inbox":
			return inboxProbe(ms.inbox, "ev-"+ms.run), nil
		case "idempotency":
			return idempotencyProbe(ms.idem, "k-"+ms.run), nil
		case "outbox":
			return outboxProbe(ms.outbox, "ev-"+ms.run), nil
		case "hub_search":
			return hubProbe(ms.hub, "zebra"+ms.run), nil
		case "federated_search":
			return federatedProbe(ms, "okapi"+ms.run), nil
		}
		return tenancytest.Probe{}, tenancytest.ErrNotCovered
	}
}

// messagingSet holds the messaging and hub routes of one tier.
type messagingSet struct {
	run      string
	inbox    *postgres.Inbox
	idem     *postgres.Idempotency
	outbox   *postgres.Outbox
	hub      *postgres.Search // nil at namespace, which a hub never reaches
	own      *postgres.Search // a per-tenant federated leg
	federate *postgres.FederatedSearch
}

// messagingRoutes returns the inbox, idempotency and outbox routes at
// tier, and the hub and federated search routes where they reach it, for
// tierRoutesOn's module, and the set their values fill. Below dedicated
// they are tenant-aware; at dedicated, plain on the routed client.
func messagingRoutes(tier tenancy.Tier) (*messagingSet, []postgres.Option, []any) {
	run := unique()
	aware := tier != tenancy.Dedicated
	rel := func(base string) naming.Name {
		if tier == tenancy.Namespace {
			return naming.PerTenant(base)
		}
		return naming.Shared(base + "_" + run)
	}
	ms := &messagingSet{run: run}
	opts := []postgres.Option{
		postgres.InboxRoute("in", postgres.InboxConfig{TenantAware: aware, Table: rel("in")}),
		postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{TenantAware: aware, Table: rel("idem")}),
		postgres.OutboxRoute("out", postgres.OutboxConfig{TenantAware: aware, Table: rel("out")}),
	}
	targets := []any{named("in", &ms.inbox), named("idem", &ms.idem), named("out", &ms.outbox)}
	if tier != tenancy.Namespace {
		// The federated route's second leg is per tenant by schema when it
		// can be (tagged), and static on the tenant's own database when
		// routed (dedicated).
		own := naming.PerTenant("notes")
		if tier == tenancy.Dedicated {
			own = naming.Shared("notes_" + run)
		}
		opts = append(opts,
			postgres.HubSearchRoute("hub", postgres.HubSearchConfig{TenantAware: aware, Table: rel("hub")}),
			postgres.HubSearchRoute("own", postgres.HubSearchConfig{TenantAware: aware, Table: own}),
			postgres.FederatedSearchRoute("all", postgres.FederatedConfig{TenantAware: aware, Hubs: []string{"hub", "own"}}))
		targets = append(targets, named("hub", &ms.hub), named("own", &ms.own), named("all", &ms.federate))
	}
	return ms, opts, targets
}

// outboxProbe writes one message and finds it by claiming the outbox (the
// claim is abandoned, so nothing is marked delivered).
func outboxProbe(o *postgres.Outbox, ev string) tenancytest.Probe {
	claimed := func(ctx context.Context) (int, error) {
		b, err := o.Claim(ctx, 100)
		if err != nil {
			return 0, err
		}
		defer b.Abandon(ctx)
		n := 0
		for _, m := range b.Messages() {
			if m.EventID == ev {
				n++
			}
		}
		return n, nil
	}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { return o.Write(ctx, outbox.Message{EventID: ev, Topic: "probe"}) },
		Read: func(ctx context.Context) (bool, error) {
			n, err := claimed(ctx)
			return n > 0, err
		},
		Count:  claimed,
		Intact: func(ctx context.Context) (bool, error) { n, err := claimed(ctx); return n == 1, err },
	}
}

// federatedProbe puts a document holding word into each leg; A must find
// both through the federated search and B neither.
func federatedProbe(ms *messagingSet, word string) tenancytest.Probe {
	hits := func(ctx context.Context) (int, error) {
		hs, err := ms.federate.Search(ctx, word, 10)
		return len(hs), err
	}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error {
			if err := ms.hub.Put(ctx, "doc-hub", "a "+word+" sighting"); err != nil {
				return err
			}
			return ms.own.Put(ctx, "doc-own", "an "+word+" sighting")
		},
		Read: func(ctx context.Context) (bool, error) {
			n, err := hits(ctx)
			return n > 0, err
		},
		Intact: func(ctx context.Context) (bool, error) { n, err := hits(ctx); return n == 2, err },
		Search: hits,
		Count:  func(ctx context.Context) (int, error) { return ms.federate.Count(ctx, word) },
	}
}
