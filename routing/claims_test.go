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

func requireShared(t *testing.T, h *harness, id tenancy.ID) {
	t.Helper()
	c, release, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), id))
	if release != nil {
		release() // before failing: Close waits for it
	}
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared || c != nil || release != nil {
		t.Fatalf("tenant %s on another tenant's target: client %v, err %v", id, c, err)
	}
	if te.Module != "m" || te.Backend != "fake" || te.Fix == "" {
		t.Errorf("refusal lacks module, backend or fix: %+v", te)
	}
}

// TestSharedTargetRefused: a second tenant resolving to a target another
// tenant uses is refused before anything is opened, whatever its
// credentials, and stays refused while the first tenant's binding is
// evicted, trimmed or retired.
func TestSharedTargetRefused(t *testing.T) {
	h := newHarnessTenants(t, 2, 2)
	h.setDB(tenant(1), "db1", "s")
	h.setDB(tenant(2), "db1", "s") // identical credentials
	h.setDB(tenant(3), "db1", "other")
	h.set(tenant(4), "s")
	h.set(tenant(5), "s")
	c1, r1 := h.acquire(t, tenant(1))
	r1()
	opened := h.opened.Load()
	requireShared(t, h, tenant(2))
	requireShared(t, h, tenant(3))
	if n := h.opened.Load(); n != opened {
		t.Errorf("a refused tenant opened %d clients", n-opened)
	}
	if c, r := h.acquire(t, tenant(1)); c != c1 {
		t.Error("the first tenant lost its client")
	} else {
		r()
	}
	// Eviction, the tenant bound and the pool bound forget bindings, not
	// claims: the first tenant's data is still there.
	h.pools.Evict(tenant(1))
	requireShared(t, h, tenant(2))
	for _, id := range []tenancy.ID{tenant(4), tenant(5)} { // trims tenant 1 and retires its pool
		_, r := h.acquire(t, id)
		r()
	}
	if st := h.pools.Stats(); st.Claims != 3 {
		t.Errorf("stats %+v, want 3 claims", st)
	}
	requireShared(t, h, tenant(2))
	if c, r := h.acquire(t, tenant(1)); c.creds.Params["db"] != "db1" {
		t.Errorf("tenant 1 came back on %v", c.creds)
	} else {
		r()
	}
}

// TestRotationMovesTheClaim: a tenant rotating between two targets of its
// own uses the new client on every later call, and releases the old
// target only once its binding has moved.
func TestRotationMovesTheClaim(t *testing.T) {
	h := newHarness(t, 4)
	h.setDB(tenant(1), "old", "s")
	h.setDB(tenant(2), "old", "s")
	old, r := h.acquire(t, tenant(1))
	r()
	h.setDB(tenant(1), "new", "s2")
	requireShared(t, h, tenant(2)) // not moved yet: within the TTL
	h.advance(2 * time.Minute)
	for range 3 {
		c, r := h.acquire(t, tenant(1))
		if c == old || c.creds.Params["db"] != "new" || c.closed.Load() {
			t.Fatalf("after rotation tenant 1 uses %v", c.creds)
		}
		r()
	}
	waitClosed(t, h, old)
	// The old target is free now, for the tenant the resolver gives it to.
	if c, r := h.acquire(t, tenant(2)); c.creds.Params["db"] != "old" {
		t.Errorf("tenant 2 got %v", c.creds)
	} else {
		r()
	}
	// And tenant 1 cannot rotate back onto it.
	h.setDB(tenant(1), "old", "s")
	h.advance(2 * time.Minute)
	requireShared(t, h, tenant(1))
}

// TestClaimsAreProcessWide: two Pools (two modules) cannot put two
// tenants on one target either; the same tenant may use it from both.
func TestClaimsAreProcessWide(t *testing.T) {
	h1 := newHarness(t, 4)
	h2 := newHarness(t, 4)
	h1.setDB(tenant(1), "db", "s")
	h2.setDB(tenant(1), "db", "s")
	h2.setDB(tenant(2), "db", "s")
	_, r := h1.acquire(t, tenant(1))
	r()
	requireShared(t, h2, tenant(2))
	_, r = h2.acquire(t, tenant(1))
	r()
	h1.pools.Close()
	requireShared(t, h2, tenant(2)) // h2 still holds it for tenant 1
	h2.pools.Close()
	h3 := newHarness(t, 4)
	h3.setDB(tenant(2), "db", "s")
	_, r = h3.acquire(t, tenant(2)) // released by Close
	r()
}

// TestConcurrentClaimsOneWinner: tenants racing for one target get it
// exactly once.
func TestConcurrentClaimsOneWinner(t *testing.T) {
	for round := range 50 {
		h := newHarness(t, 4)
		for i := range 8 {
			h.setDB(tenant(i), "db", "s")
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners = map[tenancy.ID]bool{}
		)
		for i := range 8 {
			wg.Go(func() {
				_, release, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(i)))
				if err == nil {
					release()
					mu.Lock()
					winners[tenant(i)] = true
					mu.Unlock()
				} else if tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: %d tenants share one target", round, len(winners))
		}
		h.pools.Close()
	}
}

func TestConfigNeedsTarget(t *testing.T) {
	_, err := routing.New(routing.Config[*client]{
		Resolve: func(context.Context, tenancy.ID) (routing.Credentials, error) { return routing.Credentials{}, nil },
		Open:    func(context.Context, routing.Credentials) (*client, error) { return &client{}, nil },
		Close:   func(*client) {},
	})
	if err == nil {
		t.Fatal("a Config with neither Targets nor TenantKeyed was accepted")
	}
}

// TestBadTargetFailsClosed: credentials Targets cannot read open nothing.
func TestBadTargetFailsClosed(t *testing.T) {
	h := newHarness(t, 4)
	h.setDB(tenant(1), "", "s")
	if _, _, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(1))); err == nil || h.opened.Load() != 0 {
		t.Fatalf("err %v, opened %d", err, h.opened.Load())
	}
}
