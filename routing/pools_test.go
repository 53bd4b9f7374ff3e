package routing_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// client stands in for a driver handle: routing never looks inside it.
type client struct {
	creds  routing.Credentials
	closed atomic.Bool
	held   atomic.Int64
}

type harness struct {
	name   string // the harness's endpoint: targets are process-wide
	mu     sync.Mutex
	creds  map[tenancy.ID]routing.Credentials
	fail   map[tenancy.ID]error
	now    time.Time
	opened atomic.Int64
	// current counts clients opened and not yet closed; peak its maximum.
	current, peak atomic.Int64
	closed        chan *client
	pools         *routing.Pools[*client]
}

func newHarness(t *testing.T, maxPools int) *harness {
	t.Helper()
	return newHarnessWith(t, maxPools, nil)
}

func newHarnessTenants(t *testing.T, maxPools, maxTenants int) *harness {
	t.Helper()
	return newHarnessWith(t, maxPools, func(c *routing.Config[*client]) { c.MaxTenants = maxTenants })
}

// targets is the harness's Targets: endpoint and database, no credentials.
func targets(c routing.Credentials) ([]string, error) {
	if c.Params["db"] == "" {
		return nil, errors.New("no database")
	}
	return []string{c.Endpoint + "/" + c.Params["db"]}, nil
}

func newHarnessWith(t *testing.T, maxPools int, tune func(*routing.Config[*client])) *harness {
	t.Helper()
	h := &harness{
		name:   t.Name(),
		creds:  map[tenancy.ID]routing.Credentials{},
		fail:   map[tenancy.ID]error{},
		now:    time.Unix(1_000_000, 0),
		closed: make(chan *client, 1024),
	}
	cfg := routing.Config[*client]{
		Limits: routing.Limits{MaxClients: maxPools, TTL: time.Minute},
		Resolve: func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if err := h.fail[id]; err != nil {
				return routing.Credentials{}, err
			}
			c, ok := h.creds[id]
			if !ok {
				return routing.Credentials{}, fmt.Errorf("no credentials for %s", id)
			}
			return c, nil
		},
		Open: func(_ context.Context, c routing.Credentials) (*client, error) {
			h.opened.Add(1)
			n := h.current.Add(1)
			for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
			}
			return &client{creds: c}, nil
		},
		Close: func(c *client) {
			if c.held.Load() != 0 {
				panic("closed while in flight")
			}
			if c.closed.Swap(true) {
				panic("closed twice")
			}
			h.current.Add(-1)
			select { // tests that churn many clients do not read this
			case h.closed <- c:
			default:
			}
		},
		Targets: targets,
		Module:  "m",
		Backend: "fake",
	}
	cfg = routing.WithClock(cfg, func() time.Time {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.now
	})
	if tune != nil {
		tune(&cfg)
	}
	p, err := routing.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.pools = p
	t.Cleanup(p.Close)
	return h
}

// set gives id its own database and the secret.
func (h *harness) set(id tenancy.ID, secret string) { h.setDB(id, id.Hex(), secret) }

// setDB points id at database db with the secret.
func (h *harness) setDB(id tenancy.ID, db, secret string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.creds[id] = routing.Credentials{Endpoint: h.name, User: "u", Secret: secret, Params: map[string]string{"db": db}}
}

func (h *harness) advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(d)
}

func tenant(i int) tenancy.ID {
	return tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+2))
}

func (h *harness) acquire(t *testing.T, id tenancy.ID) (*client, func()) {
	t.Helper()
	c, release, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), id))
	if err != nil {
		t.Fatalf("acquire %s: %v", id, err)
	}
	return c, release
}

func waitClosed(t *testing.T, h *harness, want *client) {
	t.Helper()
	select {
	case c := <-h.closed:
		if c != want {
			t.Fatalf("closed %v, want %v", c.creds, want.creds)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("client %v was never closed", want.creds)
	}
	// Close has been called, but the slot and the claims are freed only
	// once it has returned: wait for that, or a test that reuses the
	// target races the release.
	deadline := time.Now().Add(5 * time.Second)
	for s := h.pools.Stats(); s.Clients != s.Pools; s = h.pools.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("client %v closed but its slot is still held: %+v", want.creds, s)
		}
		time.Sleep(time.Millisecond)
	}
}

func requireOpen(t *testing.T, h *harness) {
	t.Helper()
	select {
	case c := <-h.closed:
		t.Fatalf("client %v closed early", c.creds)
	case <-time.After(20 * time.Millisecond):
	}
}

// tenantKeyed is a harness whose client keys carry the tenant: no claims.
func tenantKeyed(c *routing.Config[*client]) { c.TenantKeyed, c.Targets = true, nil }

// TestSharedFingerprintReusesOnePool: on a tenant-keyed client (Redis),
// identical credentials share one client.
func TestSharedFingerprintReusesOnePool(t *testing.T) {
	h := newHarnessWith(t, 8, tenantKeyed)
	h.setDB(tenant(1), "shared", "same")
	h.setDB(tenant(2), "shared", "same")
	h.setDB(tenant(3), "shared", "other")
	c1, r1 := h.acquire(t, tenant(1))
	c2, r2 := h.acquire(t, tenant(2))
	c3, r3 := h.acquire(t, tenant(3))
	defer r1()
	defer r2()
	defer r3()
	if c1 != c2 {
		t.Error("tenants with identical credentials got different clients")
	}
	if c1 == c3 {
		t.Error("tenants with different secrets share a client")
	}
	if got := h.pools.Stats(); got.Pools != 2 || got.Tenants != 3 || got.Claims != 0 {
		t.Errorf("stats %+v, want 2 pools, 3 tenants and no claims", got)
	}
	// Evicting one sharer keeps the client the other still uses.
	h.pools.Evict(tenant(1))
	requireOpen(t, h)
	if c, r := h.acquire(t, tenant(2)); c != c2 {
		t.Error("remaining sharer lost its client")
	} else {
		r()
	}
}

func TestLRUBound(t *testing.T) {
	h := newHarness(t, 2)
	for i := range 3 {
		h.set(tenant(i), fmt.Sprint("s", i))
	}
	c0, r := h.acquire(t, tenant(0))
	r()
	c1, r := h.acquire(t, tenant(1))
	r()
	_, r = h.acquire(t, tenant(0)) // 1 is now the least recently used
	r()
	_, r = h.acquire(t, tenant(2))
	r()
	waitClosed(t, h, c1)
	if got := h.pools.Stats(); got.Pools != 2 || got.Tenants != 2 {
		t.Errorf("%d live pools and %d bindings, want 2 and 2: the retired client's tenant is forgotten", got.Pools, got.Tenants)
	}
	if c, r := h.acquire(t, tenant(0)); c != c0 {
		t.Error("recently used client was evicted")
	} else {
		r()
	}
	// The evicted tenant resolves again and gets a fresh client.
	if c, r := h.acquire(t, tenant(1)); c == c1 || c.closed.Load() {
		t.Error("evicted tenant reused a retired client")
	} else {
		r()
	}
}

func TestEvictWhileInFlightDrainsFirst(t *testing.T) {
	h := newHarness(t, 4)
	h.set(tenant(1), "s")
	c, release := h.acquire(t, tenant(1))
	c.held.Add(1)
	h.pools.Evict(tenant(1))
	requireOpen(t, h)
	if c.closed.Load() {
		t.Fatal("evicted client closed while a query was in flight")
	}
	c.held.Add(-1)
	release()
	release() // idempotent
	waitClosed(t, h, c)
	c2, r2 := h.acquire(t, tenant(1))
	defer r2()
	if c2 == c {
		t.Error("tenant kept the evicted client")
	}
}

func TestTTLRotationMovesTenant(t *testing.T) {
	h := newHarness(t, 4)
	h.set(tenant(1), "old")
	old, r := h.acquire(t, tenant(1))
	old.held.Add(1)
	h.set(tenant(1), "new")
	if c, r2 := h.acquire(t, tenant(1)); c != old {
		t.Error("re-resolved before the TTL")
	} else {
		r2()
	}
	h.advance(2 * time.Minute)
	fresh, r3 := h.acquire(t, tenant(1))
	defer r3()
	if fresh == old || fresh.creds.Secret != "new" {
		t.Fatalf("after the TTL the tenant still uses %v", fresh.creds)
	}
	requireOpen(t, h) // old still in flight
	old.held.Add(-1)
	r()
	waitClosed(t, h, old)
	// An unchanged fingerprint after the TTL keeps the client.
	h.advance(2 * time.Minute)
	if c, r4 := h.acquire(t, tenant(1)); c != fresh {
		t.Error("unchanged credentials moved the tenant")
	} else {
		r4()
	}
	if n := h.opened.Load(); n != 2 {
		t.Errorf("opened %d clients, want 2", n)
	}
}

func TestResolverErrorFailsClosed(t *testing.T) {
	h := newHarness(t, 4)
	h.set(tenant(1), "s")
	h.set(tenant(2), "s")
	_, r := h.acquire(t, tenant(2)) // a shared pool exists
	r()
	boom := errors.New("vault down")
	h.fail[tenant(1)] = boom
	c, release, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(1)))
	if !errors.Is(err, boom) || c != nil || release != nil {
		t.Fatalf("resolver error: got client %v, err %v", c, err)
	}
	// An expired binding is not reused when re-resolution fails.
	delete(h.fail, tenant(1))
	_, r = h.acquire(t, tenant(1))
	r()
	h.advance(2 * time.Minute)
	h.fail[tenant(1)] = boom
	if _, _, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(1))); !errors.Is(err, boom) {
		t.Fatalf("expired binding with failing resolver: %v", err)
	}
}

func TestUnboundFailsClosed(t *testing.T) {
	h := newHarness(t, 4)
	h.set(tenancy.Default, "s")
	for name, ctx := range map[string]context.Context{
		"background": context.Background(),
		"global":     tenancy.WithGlobal(context.Background()),
	} {
		c, _, err := h.pools.Acquire(ctx)
		if tenancy.CodeOf(err) != tenancy.CodeTenantUnbound || c != nil {
			t.Errorf("%s: client %v, err %v", name, c, err)
		}
	}
	if _, _, err := h.pools.AcquireFor(context.Background(), tenancy.ID{}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Errorf("zero tenant: %v", err)
	}
	if n := h.opened.Load(); n != 0 {
		t.Errorf("opened %d clients with no tenant bound", n)
	}
}

func TestConcurrentRoutingUnderEviction(t *testing.T) {
	h := newHarness(t, 3)
	const tenants = 20
	for i := range tenants {
		h.set(tenant(i), fmt.Sprint("s", i%6))
	}
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 300 {
				i := rng.IntN(tenants)
				if rng.IntN(10) == 0 {
					h.pools.Evict(tenant(i))
					continue
				}
				c, release, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(i)))
				if err != nil {
					t.Error(err)
					return
				}
				c.held.Add(1)
				if c.closed.Load() || c.creds.Secret != fmt.Sprint("s", i%6) {
					t.Errorf("tenant %d got %v (closed %v)", i, c.creds, c.closed.Load())
				}
				c.held.Add(-1)
				release()
			}
		})
	}
	wg.Wait()
	if got := h.pools.Stats(); got.Pools > 3 || got.Tenants > 48 {
		t.Errorf("stats %+v exceed the bounds", got)
	}
}

func TestCloseDrainsAndRefuses(t *testing.T) {
	h := newHarness(t, 4)
	h.set(tenant(1), "s")
	c, release := h.acquire(t, tenant(1))
	done := make(chan struct{})
	go func() { h.pools.Close(); close(done) }()
	select {
	case <-done:
		t.Fatal("Close returned while a client was acquired")
	case <-time.After(30 * time.Millisecond):
	}
	release()
	<-done
	if !c.closed.Load() {
		t.Error("Close returned before closing the client")
	}
	if _, _, err := h.pools.Acquire(tenancy.WithTenant(context.Background(), tenant(1))); !errors.Is(err, routing.ErrClosed) {
		t.Errorf("acquire after close: %v", err)
	}
}

// TestTenantBoundKeepsSharedPool: trimming the oldest binding must not
// retire the pool the new tenant is being bound to.
func TestTenantBoundKeepsSharedPool(t *testing.T) {
	h := newHarnessWith(t, 4, func(c *routing.Config[*client]) { tenantKeyed(c); c.MaxTenants = 1 })
	h.setDB(tenant(1), "shared", "same")
	h.setDB(tenant(2), "shared", "same")
	c1, r1 := h.acquire(t, tenant(1))
	r1()
	c2, r2 := h.acquire(t, tenant(2))
	defer r2()
	if c2.closed.Load() || c2 != c1 {
		t.Fatalf("tenant 2 got a retired client (closed %v)", c2.closed.Load())
	}
	requireOpen(t, h)
	if got := h.pools.Stats(); got.Tenants != 1 || got.Pools != 1 {
		t.Errorf("stats %+v, want 1 tenant and 1 pool", got)
	}
}

// closeDeadline bounds a wait for a client to close.
func (h *harness) closeDeadline() <-chan time.Time { return time.After(5 * time.Second) }
