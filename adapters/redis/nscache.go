package redis

import (
	"encoding/binary"
	"sync"

	"github.com/tenantwire/tenantwire/tenancy"
)

// nsCache remembers a namespace route's resolved and validated namespaces,
// so that a tenant in active use skips the resolver, the string it
// allocates and the name check on every call. Each route has its own, so
// an entry is keyed by (tenant, route); it is direct-mapped with a fixed
// number of slots, so its size does not grow with the tenant count: a
// tenant whose slot another tenant took resolves again, at the cost it
// had without the cache. An entry matches on the whole tenant ID, never on
// its slot. Errors and invalid names are not kept: such calls fail closed
// each time. A resolver must therefore give a tenant the same namespace
// for the life of the process, as it must anyway for the tenant's keys to
// be found again.
type nsCache struct {
	slots [nsSlots]nsSlot
}

// nsSlots bounds the cache: about 40 KB of slots per namespace route, plus
// the namespaces held.
const (
	nsSlotBits = 10
	nsSlots    = 1 << nsSlotBits
)

// A slot's lock is held only to copy two words in or out; the cache's
// slots spread the tenants, so calls for different tenants rarely meet
// on one.
type nsSlot struct {
	mu sync.Mutex
	id tenancy.ID
	ns string
}

// nsSlotOf spreads tenant ids over the slots. Both halves of the id take
// part, so ids that differ only in a few bytes anywhere (sequential test
// ids, ids sharing a prefix) still spread.
func nsSlotOf(id tenancy.ID) int {
	b := id.Bytes()
	h := (binary.LittleEndian.Uint64(b[:8]) ^ binary.LittleEndian.Uint64(b[8:])) * 0x9e3779b97f4a7c15
	return int(h >> (64 - nsSlotBits))
}

func (c *nsCache) get(id tenancy.ID) (string, bool) {
	s := &c.slots[nsSlotOf(id)]
	s.mu.Lock()
	ns, ok := s.ns, s.id == id && s.ns != ""
	s.mu.Unlock()
	return ns, ok
}

func (c *nsCache) put(id tenancy.ID, ns string) {
	s := &c.slots[nsSlotOf(id)]
	s.mu.Lock()
	s.id, s.ns = id, ns
	s.mu.Unlock()
}
