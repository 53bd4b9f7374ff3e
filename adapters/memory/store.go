package memory

import (
	"sync"
	"time"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// store is one app's memory. Every map is keyed by container and then by
// (tenant tag, name), so the same key under two tenants is two entries.
type store struct {
	module string
	// tenants refuses a suspended tenant's calls (nil: no lifecycle).
	suspensions *modules.Suspensions
	tel         *telemetry.Telemetry
	// teardown: AllowTeardown.
	teardown bool
	mu       sync.RWMutex
	docs     map[string]map[entryKey]docEntry
	kv       map[string]map[entryKey]kvEntry
	streams  map[string][]Message
	// wake is closed and replaced on every append, to wake consumers.
	wake chan struct{}
	now  func() time.Time
}

type entryKey struct {
	tenant tenancy.ID
	key    string
}

type docEntry struct {
	version int64
	body    []byte // JSON: stored by value, never aliased by callers
}

type kvEntry struct {
	value   []byte
	expires time.Time // zero: never
}

func newStore() *store {
	return &store{
		docs:    map[string]map[entryKey]docEntry{},
		kv:      map[string]map[entryKey]kvEntry{},
		streams: map[string][]Message{},
		wake:    make(chan struct{}),
		now:     time.Now,
	}
}
