package redis

import (
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Route kinds of the Redis backend.
const (
	KindCache       floors.Kind = "cache"
	KindCounter     floors.Kind = "counter"
	KindIdempotency floors.Kind = "idempotency"
	KindLock        floors.Kind = "lock"
	KindPubSub      floors.Kind = "pubsub"
	KindStream      floors.Kind = "stream"
	KindFleet       floors.Kind = "fleet"
)

// Rules is what Redis can reach and how each route kind derives its tier.
// Enforcement, the CLI and the docs read this value.
var Rules = floors.Backend{
	Name:    "redis",
	Ceiling: tenancy.Dedicated,
	Kinds: map[floors.Kind]floors.KindRule{
		KindCache:       {Summary: "get, set, delete and TTL of byte values", Relations: keys},
		KindCounter:     {Summary: "atomic integer counters", Relations: keys},
		KindIdempotency: {Summary: "idempotency key to stored result, first writer wins, with expiry", Relations: keys},
		KindLock: {Summary: "distributed lock with an owner token, TTL, renew and owner-only release", Relations: keys,
			Note: "TenantGlobal for a deployment-wide (leader) lock"},
		KindPubSub: {Summary: "publish and subscribe", NeverNamespace: true,
			Note: "TenantGlobal for a deployment-wide wake; channels have no per-route namespace: tenant-aware → tagged, routed client → dedicated"},
		KindStream: {Summary: "append, consumer-group worker and trim sweep", NeverNamespace: true,
			Note: "streams have no per-route namespace: tenant-aware → tagged, routed client → dedicated"},
		KindFleet: {Summary: "replica heartbeats and the live replica list", Fleet: true,
			Note: "deployment-wide: never tenant-scoped"},
	},
}

// keys is the one relation of a keyed route: its key space.
var keys = []string{"keys"}

// kindCode is the one-letter kind segment of a key, so that routes of
// different kinds with the same name never share a key.
var kindCode = map[floors.Kind]byte{
	KindCache: 'c', KindCounter: 'n', KindIdempotency: 'i', KindLock: 'l',
	KindPubSub: 'p', KindStream: 'x', KindFleet: 'f',
}
