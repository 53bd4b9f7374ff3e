package shards

import (
	"sync"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Parking is the rule every worker that drains one queue for many tenants
// follows (the outbox relay, the header-bound Kafka consumer): a tenant
// whose item fails (suspended, offboarded, not provisioned, a poison item,
// its destination down) is parked, and while it is parked the worker
// passes over its items to serve other tenants'; its later items wait
// behind the failed one, so a tenant's order holds. The zero ID parks the
// tenant-global items as one tenant.
//
// The backoff is Base doubled per consecutive failure of the tenant,
// capped at Max, not jittered: a worker's timers never fire early, and
// tenants parked by one outage retry together, one attempt each per
// backoff, which the cap bounds. A success unparks the tenant. The state
// holds only tenants parked lately: an entry is dropped on success, on
// Forget, and once it has been due for longer than ten times Max (its
// tenant had no item to retry: a next failure starts again at Base). Ten
// times, not once: a worker whose pass takes longer than Max (a slow
// claim) retries a tenant that long after it was due, and must find its
// backoff doubled, not restarted at Base, or the tenant is due again at
// every claim and fills each with its items.
//
// Its methods are safe for concurrent use; the zero Parking is not ready,
// use NewParking.
type Parking struct {
	base, max time.Duration
	mu        sync.Mutex
	parked    map[tenancy.ID]*park
}

type park struct {
	until time.Time
	wait  time.Duration
	fails int
}

// NewParking returns a Parking whose backoff starts at base and is capped
// at ceiling (defaults 200ms and 5s).
func NewParking(base, ceiling time.Duration) *Parking {
	if base <= 0 {
		base = 200 * time.Millisecond
	}
	if ceiling <= 0 {
		ceiling = 5 * time.Second
	}
	return &Parking{base: base, max: max(ceiling, base), parked: map[tenancy.ID]*park{}}
}

// forget is how long an entry is kept once due (see Parking).
func (p *Parking) forget() time.Duration { return 10 * p.max }

// Fail parks tenant after a failed item: it returns the wait before its
// next attempt and how many failures in a row it has had.
func (p *Parking) Fail(tenant tenancy.ID, now time.Time) (time.Duration, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.parked[tenant]
	if e == nil || now.After(e.until.Add(p.forget())) {
		e = &park{}
		p.parked[tenant] = e
	}
	e.fails++
	e.wait = doubled(e.wait, p.base, p.max)
	e.until = now.Add(e.wait)
	return e.wait, e.fails
}

// Ok unparks tenant: its item went through.
func (p *Parking) Ok(tenant tenancy.ID) {
	p.mu.Lock()
	if len(p.parked) > 0 {
		delete(p.parked, tenant)
	}
	p.mu.Unlock()
}

// Forget drops tenant's state (its items were given up on).
func (p *Parking) Forget(tenant tenancy.ID) { p.Ok(tenant) }

// Parked reports whether tenant's items must wait at now.
func (p *Parking) Parked(tenant tenancy.ID, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.parked[tenant]
	return e != nil && now.Before(e.until)
}

// Until is when tenant's parking ends (zero: not parked).
func (p *Parking) Until(tenant tenancy.ID) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.parked[tenant]; e != nil {
		return e.until
	}
	return time.Time{}
}

// Skip returns the tenants parked at now, whose items a claim should
// leave out, and when the first of them is due again (zero: none parked).
// It drops the entries due for longer than ten times Max.
func (p *Parking) Skip(now time.Time) ([]tenancy.ID, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []tenancy.ID
	var next time.Time
	for id, e := range p.parked {
		switch {
		case now.Before(e.until):
			out = append(out, id)
			if next.IsZero() || e.until.Before(next) {
				next = e.until
			}
		case now.After(e.until.Add(p.forget())):
			delete(p.parked, id)
		}
	}
	return out, next
}

// Len is how many tenants have parking state.
func (p *Parking) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parked)
}
