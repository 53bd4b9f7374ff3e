package redis

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/tenantwire/tenantwire/tenancy"
)

// nsCache remembers a namespace route's resolved and validated namespaces,
// so that a tenant in active use skips the resolver, the string it
// allocates and the name check on every call. Each route has its own, so
// an entry is keyed by (tenant, route). It is 8-way set-associative with a
// fixed number of sets, so its size does not grow with the tenant count
// past nsSets × nsWays entries: a tenant whose entry another tenant took
// resolves again, at the cost it had without the cache. An entry matches
// on the whole tenant ID, never on its set. Errors and invalid names are
// not kept: such calls fail closed each time. A resolver must therefore
// give a tenant the same namespace for the life of the process, as it must
// anyway for the tenant's keys to be found again.
type nsCache struct {
	// seed makes the set a tenant lands in differ from process to
	// process, so that nobody choosing tenant ids can aim them at one set.
	seed uint64
	// sets are made on first use: a route serving a few tenants holds a
	// few sets, not all of them.
	sets [nsSets]atomic.Pointer[nsSet]
}

// nsSets × nsWays bounds the cache at 16,384 tenants per namespace route:
// 16 KB of set pointers, and when every set is in use about 0.6 MB of sets
// plus the namespaces held. A workload cycling in order over 10,000
// tenants resolves about 4% of its calls again (8 ways; 4 ways of twice
// the sets, the same memory, resolve 11%); a direct-mapped cache of 1,024
// slots resolved about three in four over 1,000 sequential ids.
const (
	nsSetBits = 11
	nsSets    = 1 << nsSetBits
	nsWays    = 8
)

// A set's lock is held only to compare eight ids and copy two words; the
// sets spread the tenants, so calls for different tenants rarely meet on
// one.
type nsSet struct {
	mu   sync.Mutex
	ways [nsWays]nsEntry
}

type nsEntry struct {
	id tenancy.ID
	ns string // "" for a way never used: validName refuses an empty name
}

func newNSCache() *nsCache { return &nsCache{seed: rand.Uint64()} }

// mix64 is MurmurHash3's finalizer: every input bit moves every output
// bit, so ids that differ only in a few bytes (sequential ids, ids sharing
// a prefix) spread over every set.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// hash places a tenant: its top nsSetBits pick the set, its low three bits
// the way the tenant takes when its set is full.
func (c *nsCache) hash(id tenancy.ID) uint64 {
	b := id.Bytes()
	return mix64(binary.LittleEndian.Uint64(b[:8]) ^ mix64(binary.LittleEndian.Uint64(b[8:])^c.seed))
}

func setOf(h uint64) int { return int(h >> (64 - nsSetBits)) }

func (c *nsCache) get(id tenancy.ID) (string, bool) {
	s := c.sets[setOf(c.hash(id))].Load()
	if s == nil {
		return "", false
	}
	s.mu.Lock()
	for i := range s.ways {
		if e := &s.ways[i]; e.id == id && e.ns != "" {
			ns := e.ns
			s.mu.Unlock()
			return ns, true
		}
	}
	s.mu.Unlock()
	return "", false
}

// put keeps ns for id: in id's own way if it has one, else in an unused
// way, else in the way id's hash names. A fixed way per tenant, rather
// than the least recently used one, keeps most of a set whose tenants are
// cycled in order, where LRU would evict each just before its turn.
func (c *nsCache) put(id tenancy.ID, ns string) {
	h := c.hash(id)
	p := &c.sets[setOf(h)]
	s := p.Load()
	if s == nil {
		s = new(nsSet)
		if !p.CompareAndSwap(nil, s) {
			s = p.Load()
		}
	}
	s.mu.Lock()
	w, free := int(h%nsWays), -1
	for i := range s.ways {
		if s.ways[i].id == id {
			free = i
			break
		}
		if s.ways[i].ns == "" && free < 0 {
			free = i
		}
	}
	if free >= 0 {
		w = free
	}
	s.ways[w] = nsEntry{id: id, ns: ns}
	s.mu.Unlock()
}

// drop forgets id's entry (its tenant was offboarded).
func (c *nsCache) drop(id tenancy.ID) {
	s := c.sets[setOf(c.hash(id))].Load()
	if s == nil {
		return
	}
	s.mu.Lock()
	for i := range s.ways {
		if s.ways[i].id == id {
			s.ways[i] = nsEntry{}
		}
	}
	s.mu.Unlock()
}
