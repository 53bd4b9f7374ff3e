package mongo

import (
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Route kinds of the MongoDB backend.
const (
	kindDocument  floors.Kind = "document"
	kindSearch    floors.Kind = "search"
	kindCounter   floors.Kind = "counter"
	kindOutbox    floors.Kind = "outbox"
	kindRawFilter floors.Kind = "raw_filter"
)

// Relation roles a route names.
const (
	roleCollection = "collection"
	roleIndex      = "index"
)

// Rules is what MongoDB can reach and how each route kind derives its tier.
// Enforcement, the CLI and the docs read it; each call returns a fresh value, so no
// caller can change what the adapter enforces.
func Rules() floors.Backend {
	return floors.Backend{
		Name:    "mongodb",
		Ceiling: tenancy.Dedicated,
		Kinds: map[floors.Kind]floors.KindRule{
			kindDocument: {Summary: "typed documents: get, create, optimistic update, delete, list and count",
				Relations: []string{roleCollection}},
			kindSearch: {Summary: "term search over a text field", Relations: []string{roleCollection},
				Note: "only the collection counts: an index name is scoped to its collection"},
			kindCounter: {Summary: "atomic integer counters", Relations: []string{roleCollection}},
			kindOutbox: {Summary: "outbox rows carrying tenant and event id, drained by a relay",
				Relations: []string{roleCollection}, ResolverCountsOnlyWhenTenantAware: true,
				Note: "a per-tenant collection is used (and counts) only when the outbox is tenant-aware"},
			kindRawFilter: {Summary: "user-written query documents", Relations: []string{roleCollection},
				Origin: tenancy.Raw, Note: "origin raw: nothing can rewrite the filter, so only dedicated"},
		},
	}
}

// rules is the package's own copy, read on every call.
var rules = Rules()
