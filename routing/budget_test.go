package routing_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestBudgetCountsClosingClients: with 12 tenants calling at once and
// MaxClients 2, never more than 2 clients are open or closing: a retired
// client holds its slot until Close has returned.
func TestBudgetCountsClosingClients(t *testing.T) {
	h := newHarnessWith(t, 2, func(c *routing.Config[*client]) { c.MaxWait = time.Minute })
	for i := range 12 {
		h.set(tenant(i), "s")
	}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			for range 20 {
				c, release, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(i)))
				if err != nil {
					t.Error(err)
					return
				}
				c.held.Add(1)
				time.Sleep(time.Millisecond)
				c.held.Add(-1)
				release()
			}
		})
	}
	wg.Wait()
	if p := h.peak.Load(); p > 2 {
		t.Errorf("%d clients open at once, bound is 2", p)
	}
	if st := h.pools.Stats(); st.Clients > 2 || st.Pools > 2 {
		t.Errorf("stats %+v exceed the bound", st)
	}
}

// TestBudgetWaitIsBounded: a caller holding one tenant's client while
// acquiring another's, with every slot taken, gets
// connection_budget_exhausted when its context ends, not a hang; so does a
// caller with no deadline once MaxWait has passed.
func TestBudgetWaitIsBounded(t *testing.T) {
	h := newHarnessWith(t, 1, func(c *routing.Config[*client]) { c.MaxWait = 200 * time.Millisecond })
	h.set(tenant(1), "s")
	h.set(tenant(2), "s")
	_, hold := h.acquire(t, tenant(1))
	defer hold()
	ctx, cancel := context.WithTimeout(tenancy.WithTenant(context.Background(), tenant(2)), 50*time.Millisecond)
	defer cancel()
	_, _, err := h.pools.Acquire(ctx)
	if tenancy.CodeOf(err) != tenancy.CodeConnectionBudgetExhausted || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("context-bounded wait: %v", err)
	}
	start := time.Now()
	_, _, err = h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(2)))
	if tenancy.CodeOf(err) != tenancy.CodeConnectionBudgetExhausted || time.Since(start) > 5*time.Second {
		t.Fatalf("MaxWait-bounded wait: %v after %s", err, time.Since(start))
	}
	var te *tenancy.Error
	if errors.As(err, &te); te.Module != "m" || te.Backend != "fake" || te.Fix == "" {
		t.Errorf("refusal lacks module, backend or fix: %+v", te)
	}
	if n := h.opened.Load(); n != 1 {
		t.Errorf("opened %d clients past a bound of 1", n)
	}
}

// TestBudgetWaiterGetsTheFreedSlot: the least recently used client is
// retired for a waiter and, once its last call is released and it has
// closed, the waiter opens its own.
func TestBudgetWaiterGetsTheFreedSlot(t *testing.T) {
	h := newHarnessWith(t, 1, func(c *routing.Config[*client]) { c.MaxWait = time.Minute })
	h.set(tenant(1), "s")
	h.set(tenant(2), "s")
	c1, release := h.acquire(t, tenant(1))
	c1.held.Add(1)
	got := make(chan *client)
	go func() {
		c, r, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(2)))
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		r()
		got <- c
	}()
	select {
	case <-got:
		t.Fatal("a second client opened while the first was in use")
	case <-time.After(50 * time.Millisecond):
	}
	c1.held.Add(-1)
	release()
	if c2 := <-got; c2 == nil || c2 == c1 || !c1.closed.Load() {
		t.Fatalf("waiter got %v; first closed %v", c2, c1.closed.Load())
	}
	if p := h.peak.Load(); p != 1 {
		t.Errorf("peak %d clients, bound is 1", p)
	}
}
