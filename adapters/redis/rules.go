package redis

import (
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Route kinds of the Redis backend.
const (
	kindCache       floors.Kind = "cache"
	kindCounter     floors.Kind = "counter"
	kindIdempotency floors.Kind = "idempotency"
	kindLock        floors.Kind = "lock"
	kindPubSub      floors.Kind = "pubsub"
	kindStream      floors.Kind = "stream"
	kindFleet       floors.Kind = "fleet"
)

// Rules is what Redis can reach and how each route kind derives its tier
// (a keyed route's one relation is its key space, "keys"). Enforcement,
// the CLI and the docs read it; each call returns a fresh value, so no
// caller can change what the adapter enforces.
func Rules() floors.Backend {
	return floors.Backend{
		Name:    "redis",
		Ceiling: tenancy.Dedicated,
		Kinds: map[floors.Kind]floors.KindRule{
			kindCache:       {Summary: "get, set, delete and TTL of byte values", Relations: []string{"keys"}},
			kindCounter:     {Summary: "atomic integer counters", Relations: []string{"keys"}},
			kindIdempotency: {Summary: "idempotency key to stored result, first writer wins, with expiry", Relations: []string{"keys"}},
			kindLock: {Summary: "distributed lock with an owner token, TTL, renew and owner-only release", Relations: []string{"keys"},
				Note: "TenantGlobal for a deployment-wide (leader) lock"},
			kindPubSub: {Summary: "publish and subscribe", NeverNamespace: true,
				Note: "TenantGlobal for a deployment-wide wake; channels have no per-route namespace: tenant-aware → tagged, routed client → dedicated"},
			kindStream: {Summary: "append, consumer-group worker and trim sweep", NeverNamespace: true,
				Note: "streams have no per-route namespace: tenant-aware → tagged, routed client → dedicated"},
			kindFleet: {Summary: "replica heartbeats and the live replica list", Fleet: true,
				Note: "deployment-wide: never tenant-scoped"},
		},
	}
}

// rules is the package's own copy, read on every call.
var rules = Rules()

// kindCode is the one-letter kind segment of a key, so that routes of
// different kinds with the same name never share a key.
var kindCode = map[floors.Kind]byte{
	kindCache: 'c', kindCounter: 'n', kindIdempotency: 'i', kindLock: 'l',
	kindPubSub: 'p', kindStream: 'x', kindFleet: 'f',
}
