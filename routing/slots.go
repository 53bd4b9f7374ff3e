package routing

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// The connection budget: a slot is taken before a client opens and freed
// only after its Close returns, so clients still closing count against
// MaxClients and MaxClients × the per-client maximum is a hard limit.

// takeSlot waits for room to open a client. When every slot is taken and
// fewer clients are draining than callers are waiting, the least recently
// used client is retired so that one frees up; the wait is bounded by ctx
// and MaxWait. A caller that holds a client while opening another can wait
// on itself: that ends in connection_budget_exhausted, not a hang.
func (p *Pools[C]) takeSlot(ctx context.Context) error {
	p.mu.Lock()
	if p.used < p.cfg.MaxClients && len(p.waiters) == 0 {
		p.used++
		p.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	p.waiters = append(p.waiters, ch)
	p.makeRoom()
	p.mu.Unlock()
	timer := time.NewTimer(p.cfg.MaxWait)
	defer timer.Stop()
	var cause error
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		cause = ctx.Err()
	case <-timer.C:
		cause = fmt.Errorf("waited %s", p.cfg.MaxWait)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.waiters, ch); i >= 0 {
		p.waiters = slices.Delete(p.waiters, i, i+1)
	} else { // granted while giving up: pass it on
		p.freeSlot()
	}
	return p.exhausted(cause)
}

// freeSlot hands a slot to the first waiter, or returns it. Called with
// mu held.
func (p *Pools[C]) freeSlot() {
	if len(p.waiters) == 0 {
		p.used--
		return
	}
	close(p.waiters[0])
	p.waiters = slices.Delete(p.waiters, 0, 1)
	p.makeRoom()
}

// makeRoom retires idle-most clients until as many are draining as callers
// wait for a slot. Called with mu held.
func (p *Pools[C]) makeRoom() {
	for !p.closed && len(p.waiters) > p.draining && len(p.pools) > 0 {
		p.retireLRU()
	}
}

func (p *Pools[C]) exhausted(cause error) error {
	return fmt.Errorf("%w: %w", &tenancy.Error{
		Code: tenancy.CodeConnectionBudgetExhausted, Module: p.cfg.Module, Backend: p.cfg.Backend,
		Detail: fmt.Sprintf("all %d client slots are held by clients in use or still closing, so no client could be opened for this tenant", p.cfg.MaxClients),
		Fix:    "raise the routed pool bound (and the connection budget), make calls shorter, or release a tenant's client before acquiring another tenant's",
	}, cause)
}

// retireLRU retires the least recently used live pool; its tenants
// resolve again on their next call. Called with mu held.
func (p *Pools[C]) retireLRU() {
	var oldest *pool[C]
	for _, pl := range p.pools {
		if oldest == nil || pl.lastUsed.Load() < oldest.lastUsed.Load() {
			oldest = pl
		}
	}
	if oldest == nil {
		return
	}
	// The claim stays: see Evict. With claims a client serves only the
	// tenant in its key, so only that binding can point at it: no scan of
	// every binding under the lock.
	if t := oldest.key.tenant; !t.IsZero() {
		if b, ok := p.tenants[t]; ok && b.pool == oldest {
			delete(p.tenants, t)
		}
	} else {
		for t, b := range p.tenants {
			if b.pool == oldest {
				delete(p.tenants, t)
			}
		}
	}
	p.retire(oldest)
}
