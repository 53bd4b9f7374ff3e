package postgres

import (
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Route kinds of the PostgreSQL backend.
const (
	KindDocument        floors.Kind = "document"
	KindSearch          floors.Kind = "search"
	KindCounter         floors.Kind = "counter"
	KindAnalytics       floors.Kind = "analytics"
	KindDynamicRead     floors.Kind = "dynamic_read"
	KindOutbox          floors.Kind = "outbox"
	KindInbox           floors.Kind = "inbox"
	KindIdempotency     floors.Kind = "idempotency"
	KindHubSearch       floors.Kind = "hub_search"
	KindFederatedSearch floors.Kind = "federated_search"
)

// Rules is what PostgreSQL can reach and which relations of each route kind
// count toward namespace. Enforcement, the matrix and the docs
// all read this value.
var Rules = floors.Backend{
	Name:    "postgres",
	Ceiling: tenancy.Dedicated,
	Kinds: map[floors.Kind]floors.KindRule{
		KindDocument: {
			Summary:   "typed documents stored as jsonb, with an optimistic version",
			Relations: []string{"read", "write", "history"},
			Note:      "a static history table keeps the route below namespace even with history off",
		},
		KindSearch: {
			Summary:   "full-text search over a heap table and its text index",
			Relations: []string{"read", "heap", "index"},
			Note:      "the index relation counts too",
		},
		KindCounter: {
			Summary:   "named integer counters",
			Relations: []string{"table"},
		},
		KindAnalytics: {
			Summary:   "named aggregate queries the adapter builds",
			Relations: []string{"source"},
		},
		KindDynamicRead: {
			Summary:   "runtime SQL from a trusted compiler, under a per-tenant role",
			Relations: []string{"schema"},
			Origin:    tenancy.Compiled,
			Note:      "origin compiled: needs namespace; also needs a per-tenant role unless routed",
		},
		KindOutbox: {
			Summary:                           "transactional outbox drained by a relay",
			Relations:                         []string{"table"},
			ResolverCountsOnlyWhenTenantAware: true,
			Note:                              "the resolver gets the tenant only when tenant-aware",
		},
		KindInbox: {
			Summary:                           "deduplicating inbox of consumed messages",
			Relations:                         []string{"table"},
			ResolverCountsOnlyWhenTenantAware: true,
			Note:                              "the resolver gets the tenant only when tenant-aware",
		},
		KindIdempotency: {
			Summary:                           "idempotency keys and stored responses",
			Relations:                         []string{"table"},
			ResolverCountsOnlyWhenTenantAware: true,
			Note:                              "the resolver gets the tenant only when tenant-aware",
		},
		KindHubSearch: {
			Summary:        "search over one shared hub table",
			NeverNamespace: true,
			Note:           "never namespace: the hub is one table",
		},
		KindFederatedSearch: {
			Summary:                    "search across several hub legs",
			NeverNamespace:             true,
			TaggedNeedsScopedRelations: true,
			Note:                       "tagged only when tenant-aware and every leg is a scoped hub leg",
		},
	},
}
