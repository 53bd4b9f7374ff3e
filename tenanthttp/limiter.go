package tenanthttp

import (
	"fmt"
	"hash/maphash"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// limiter is an Admission's state, sharded by tenant so that requests of
// different tenants rarely meet on one lock.
type limiter struct {
	def     Limits
	tenants map[tenancy.ID]Limits
	forFn   func(tenancy.ID) Limits
	faults  []string
	epoch   time.Time
	seed    maphash.Seed
	shards  [16]shard
	// count is how many tenants' state all shards hold; past max, adding
	// one forgets another.
	max   int64
	count atomic.Int64
}

func newLimiter(a *Admission) *limiter {
	l := &limiter{def: a.Default, forFn: a.For, epoch: time.Now(), seed: maphash.MakeSeed(), tenants: make(map[tenancy.ID]Limits, len(a.Tenants))}
	if f := a.Default.fault(); f != "" {
		l.faults = append(l.faults, "Default: "+f)
	}
	var bad []string
	for id, lim := range a.Tenants {
		l.tenants[id] = lim
		if f := lim.fault(); f != "" {
			bad = append(bad, "Tenants["+id.String()+"]: "+f)
		}
	}
	sort.Strings(bad)
	l.faults = append(l.faults, bad...)
	maxT := a.MaxTenants
	if maxT < 0 {
		l.faults = append(l.faults, fmt.Sprintf("MaxTenants %d is negative", maxT))
	}
	if maxT <= 0 {
		maxT = DefaultMaxTenants
	}
	l.max = int64(maxT)
	for i := range l.shards {
		l.shards[i].m = map[tenancy.ID]*entry{}
	}
	return l
}

// entry is one tenant's state, on its shard's recency list.
type entry struct {
	id         tenancy.ID
	tokens     float64
	last       time.Duration // since the limiter's epoch (monotonic)
	inFlight   int
	prev, next *entry // toward the most, the least recently active
}

type shard struct {
	mu         sync.Mutex
	m          map[tenancy.ID]*entry
	head, tail *entry
	_          [64]byte // keeps two shards' locks off one cache line
}

func (l *limiter) admit(module, route string, id tenancy.ID, lim Limits) (Ticket, error) {
	i := maphash.Comparable(l.seed, id) % uint64(len(l.shards))
	sh := &l.shards[i]
	now := time.Since(l.epoch)
	sh.mu.Lock()
	e := sh.m[id]
	if e == nil {
		e = &entry{id: id, tokens: float64(lim.Burst), last: now}
		sh.m[id] = e
		sh.push(e)
		if l.count.Add(1) > l.max {
			if sh.evictIdle(e) {
				l.count.Add(-1)
			} else {
				defer l.evictElsewhere(int(i))
			}
		}
	} else if sh.head != e {
		sh.unlink(e)
		sh.push(e)
	}
	if lim.InFlight > 0 && e.inFlight >= lim.InFlight {
		sh.mu.Unlock()
		return Ticket{}, &LimitError{RetryAfter: time.Second, Err: &tenancy.Error{
			Code: tenancy.CodeTenantConcurrencyLimited, Module: module, Route: route,
			Detail: fmt.Sprintf("tenant %s already has %d requests in flight, its InFlight limit", id, lim.InFlight),
			Fix:    "retry once one of the tenant's requests has ended, or raise the tenant's InFlight (Admission.Tenants, Admission.For or Admission.Default)",
		}}
	}
	if lim.Rate > 0 {
		tokens := min(e.tokens+(now-e.last).Seconds()*lim.Rate, float64(lim.Burst))
		e.last = now
		if tokens < 1 {
			e.tokens = tokens
			sh.mu.Unlock()
			wait := time.Duration((1 - tokens) / lim.Rate * float64(time.Second))
			return Ticket{}, &LimitError{RetryAfter: wait, Err: &tenancy.Error{
				Code: tenancy.CodeTenantRateLimited, Module: module, Route: route,
				Detail: fmt.Sprintf("tenant %s is over its rate of %g requests a second (burst %d)", id, lim.Rate, lim.Burst),
				Fix:    "retry after the time given, or raise the tenant's Rate or Burst (Admission.Tenants, Admission.For or Admission.Default)",
			}}
		}
		e.tokens = tokens - 1
	}
	e.inFlight++
	sh.mu.Unlock()
	return Ticket{l: l, sh: sh, e: e}, nil
}

// evictIdle forgets the shard's least recently active tenant with nothing
// in flight, other than keep; false when it has none.
func (sh *shard) evictIdle(keep *entry) bool {
	for old := sh.tail; old != nil; old = old.prev {
		if old != keep && old.inFlight == 0 {
			sh.remove(old)
			return true
		}
	}
	return false
}

// evictElsewhere forgets one idle tenant of another shard than from, one
// shard's lock at a time. When every tenant has requests in flight none is
// forgotten: the state holds one more until a request ends (Ticket.Done
// trims it).
func (l *limiter) evictElsewhere(from int) {
	for k := 1; k < len(l.shards); k++ {
		sh := &l.shards[(from+k)%len(l.shards)]
		sh.mu.Lock()
		ok := sh.evictIdle(nil)
		sh.mu.Unlock()
		if ok {
			l.count.Add(-1)
			return
		}
	}
}

func (sh *shard) push(e *entry) {
	e.prev, e.next = nil, sh.head
	if sh.head != nil {
		sh.head.prev = e
	}
	sh.head = e
	if sh.tail == nil {
		sh.tail = e
	}
}

func (sh *shard) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		sh.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		sh.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (sh *shard) remove(e *entry) {
	sh.unlink(e)
	delete(sh.m, e.id)
}
