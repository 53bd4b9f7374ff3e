package postgres_test

import (
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestHubSearchBoundary: under hub search at tagged and dedicated (a hub
// never reaches namespace), tenant B sees and changes nothing of tenant A's.
func TestHubSearchBoundary(t *testing.T) {
	for name, tc := range msgTiers(t, "hub_"+unique()) {
		if name == "namespace" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			run := unique()
			var h *postgres.Search
			c := start(t, postgres.Module("pg", tc.conn, postgres.SchemaPrefix("tw"+run+"_"),
				postgres.HubSearchRoute("hub", postgres.HubSearchConfig{TenantAware: tc.aware, Table: tc.table})), named("hub", &h))
			provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
			tenancytest.Boundary(t, hubProbe(h, "zebra"+run))
		})
	}
}

// hubProbe puts a document holding word into the hub.
func hubProbe(h *postgres.Search, word string) tenancytest.Probe {
	found := func(ctx context.Context) (bool, error) {
		hits, err := h.Search(ctx, word, 10)
		return len(hits) == 1 && hits[0].ID == "doc", err
	}
	return tenancytest.Probe{
		Write:  func(ctx context.Context) error { return h.Put(ctx, "doc", "a "+word+" crossing") },
		Read:   found,
		Intact: found,
		Search: func(ctx context.Context) (int, error) { hits, err := h.Search(ctx, word, 10); return len(hits), err },
		Count:  func(ctx context.Context) (int, error) { return h.Count(ctx, word) },
		Delete: func(ctx context.Context) error { return h.Remove(ctx, "doc") },
	}
}

// TestFederatedSearchBoundary: tenant B sees nothing of tenant A's through a
// tagged federated search over a tenant-aware hub leg and a per-tenant hub
// leg.
func TestFederatedSearchBoundary(t *testing.T) {
	run := unique()
	var (
		shared, own *postgres.Search
		fed         *postgres.FederatedSearch
	)
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"),
		postgres.HubSearchRoute("shared", postgres.HubSearchConfig{TenantAware: true, Table: naming.Shared("fed_" + run)}),
		postgres.HubSearchRoute("own", postgres.HubSearchConfig{Table: naming.PerTenant("notes")}),
		postgres.FederatedSearchRoute("all", postgres.FederatedConfig{TenantAware: true, Hubs: []string{"shared", "own"}}),
	), named("shared", &shared), named("own", &own), named("all", &fed))
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	word := "okapi" + run
	for _, h := range []*postgres.Search{shared, own} {
		leg := h
		found := func(ctx context.Context) (bool, error) {
			hits, err := fed.Search(ctx, word, 10)
			return len(hits) == 1 && hits[0].ID == "doc", err
		}
		tenancytest.Boundary(t, tenancytest.Probe{
			Write:  func(ctx context.Context) error { return leg.Put(ctx, "doc", "an "+word+" sighting") },
			Read:   found,
			Intact: found,
			Search: func(ctx context.Context) (int, error) { hits, err := fed.Search(ctx, word, 10); return len(hits), err },
			Count:  func(ctx context.Context) (int, error) { return fed.Count(ctx, word) },
		})
		if err := leg.Remove(tenancy.WithTenant(context.Background(), tenancytest.TenantA), "doc"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fed.Search(context.Background(), word, 10); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Errorf("unbound federated search: %v", err)
	}
}

// TestMessagingTiers: the tier each messaging route reaches for its wiring,
// read from the live matrix.
func TestMessagingTiers(t *testing.T) {
	hub := func(name string, aware bool, rel naming.Name) postgres.Option {
		return postgres.HubSearchRoute(name, postgres.HubSearchConfig{TenantAware: aware, Table: rel})
	}
	fed := func(aware bool, tables ...naming.Name) postgres.Option {
		return postgres.FederatedSearchRoute("all", postgres.FederatedConfig{TenantAware: aware, Hubs: []string{"a", "b"}, Tables: tables})
	}
	cases := []struct {
		name  string
		route string
		want  tenancy.Tier
		opts  []postgres.Option
	}{
		{"per-tenant hub is never namespace", "a", tenancy.Tagged,
			[]postgres.Option{hub("a", true, naming.PerTenant("h"))}},
		{"per-tenant hub not tenant-aware is none", "a", tenancy.None,
			[]postgres.Option{hub("a", false, naming.PerTenant("h"))}},
		{"federated over scoped hubs is tagged", "all", tenancy.Tagged,
			[]postgres.Option{hub("a", true, naming.Shared("h")), hub("b", false, naming.PerTenant("h")), fed(true)}},
		{"federated not tenant-aware is none", "all", tenancy.None,
			[]postgres.Option{hub("a", true, naming.Shared("h")), hub("b", true, naming.Shared("h2")), fed(false)}},
		{"federated with an unscoped hub leg is none", "all", tenancy.None,
			[]postgres.Option{hub("a", true, naming.Shared("h")), hub("b", false, naming.Shared("h2")), fed(true)}},
		{"federated with a table leg is none", "all", tenancy.None,
			[]postgres.Option{hub("a", true, naming.Shared("h")), hub("b", true, naming.Shared("h2")), fed(true, naming.Shared("x"))}},
		{"per-tenant inbox counts only when tenant-aware", "in", tenancy.None,
			[]postgres.Option{postgres.InboxRoute("in", postgres.InboxConfig{Table: naming.PerTenant("i")})}},
		{"tenant-aware per-tenant inbox is namespace", "in", tenancy.Namespace,
			[]postgres.Option{postgres.InboxRoute("in", postgres.InboxConfig{TenantAware: true, Table: naming.PerTenant("i")})}},
		{"per-tenant outbox counts only when tenant-aware", "out", tenancy.None,
			[]postgres.Option{postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.PerTenant("o")})}},
		{"tenant-aware per-tenant idempotency store is namespace", "idem", tenancy.Namespace,
			[]postgres.Option{postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{TenantAware: true, Table: naming.PerTenant("k")})}},
		{"federated over per-tenant hubs is never namespace", "all", tenancy.Tagged,
			[]postgres.Option{hub("a", false, naming.PerTenant("h")), hub("b", false, naming.PerTenant("h2")), fed(true)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m floors.Matrix
			app := fx.New(fx.NopLogger, postgres.Module("pg", append([]postgres.Option{postgres.Connect(nowhere)}, tc.opts...)...),
				fx.Invoke(func(l modules.Live) { m = l.Matrix() }))
			if err := app.Err(); err != nil {
				t.Fatal(err)
			}
			seen := false
			for _, r := range m.Rows {
				if r.Route == tc.route {
					seen = true
					if r.Reached != tc.want {
						t.Errorf("%s reaches %s, want %s", r.Route, r.Reached, tc.want)
					}
				}
			}
			if !seen {
				t.Errorf("no matrix row for %s", tc.route)
			}
		})
	}
	t.Run("a leg that is not a hub route", func(t *testing.T) {
		tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, postgres.Module("pg", postgres.Connect(nowhere), fed(true)))
	})
	t.Run("a per-tenant table leg", func(t *testing.T) {
		tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, postgres.Module("pg", postgres.Connect(nowhere),
			hub("a", true, naming.Shared("h")), hub("b", true, naming.Shared("h2")), fed(true, naming.PerTenant("x"))))
	})
}

// TestSearchLimitComesFirst: a search route and a federated search refuse a
// limit that is not positive before anything else, tenant or connection
// (none is bound, and the server does not exist). No server is needed.
func TestSearchLimitComesFirst(t *testing.T) {
	var (
		hub *postgres.Search
		fed *postgres.FederatedSearch
	)
	app := fx.New(fx.NopLogger, postgres.Module("pg", postgres.Connect(nowhere),
		postgres.HubSearchRoute("hub", postgres.HubSearchConfig{TenantAware: true, Table: naming.Shared("h")}),
		postgres.FederatedSearchRoute("all", postgres.FederatedConfig{TenantAware: true, Hubs: []string{"hub"}})),
		named("hub", &hub), named("all", &fed))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{0, -1} {
		hits, err := hub.Search(context.Background(), "x", limit)
		if err == nil || err.Error() != "postgres: search limit must be positive" || hits != nil {
			t.Errorf("search, limit %d: %v, %v", limit, hits, err)
		}
		fhits, err := fed.Search(context.Background(), "x", limit)
		if err == nil || err.Error() != "postgres: search limit must be positive" || fhits != nil {
			t.Errorf("federated search, limit %d: %v, %v", limit, fhits, err)
		}
	}
	if _, err := fed.Search(context.Background(), "x", 1); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Errorf("unbound federated search, limit 1: %v", err)
	}
}
