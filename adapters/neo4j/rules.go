package neo4j

import (
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Route kinds of the Neo4j backend.
const (
	kindGraph     floors.Kind = "graph"
	kindRawCypher floors.Kind = "raw_cypher"
)

// roleDatabase is the one relation a Neo4j route names: the database its
// sessions open.
const roleDatabase = "database"

// Rules is what Neo4j can reach and how each route kind derives its tier:
// a tenant property → tagged, a per-tenant database on one driver →
// namespace, a per-tenant driver → dedicated. Enforcement, the CLI and the
// docs read it; each call returns a fresh value, so no
// caller can change what the adapter enforces.
func Rules() floors.Backend {
	return floors.Backend{
		Name:    "neo4j",
		Ceiling: tenancy.Dedicated,
		Kinds: map[floors.Kind]floors.KindRule{
			kindGraph: {
				Summary:   "nodes and relationships: create, get, update, delete, match by label and properties, bounded-depth traversal",
				Relations: []string{roleDatabase},
				Note:      "tagged puts the tenant predicate on every node and relationship of every pattern, the whole path included",
			},
			kindRawCypher: {
				Summary:   "raw Cypher hatch (off unless the route is added)",
				Relations: []string{roleDatabase},
				Origin:    tenancy.Raw,
				Note:      "origin raw: only a routed driver (dedicated) clears its floor",
			},
		},
	}
}

// rules is the package's own copy, read on every call.
var rules = Rules()
