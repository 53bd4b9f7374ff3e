package routing_test

// Tests that pin down the configuration defaults and the TTL edge mutation
// testing found unchecked (make mutate; docs/reliability.md).

import (
	"context"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type counted struct {
	resolves int
	now      time.Time
}

func (c *counted) config() routing.Config[int] {
	return routing.Config[int]{
		Resolve: func(context.Context, tenancy.ID) (routing.Credentials, error) {
			c.resolves++
			return routing.Credentials{Endpoint: "e", User: "u"}, nil
		},
		Open:  func(context.Context, routing.Credentials) (int, error) { return 1, nil },
		Close: func(int) {},
		Now:   func() time.Time { return c.now },
		// One credential set for every tenant: only a tenant-keyed client
		// may serve them all (the claims have tests of their own).
		TenantKeyed: true,
	}
}

// Each of Resolve, Open and Close is required on its own.
func TestNewNeedsEveryFunction(t *testing.T) {
	c := &counted{}
	for name, drop := range map[string]func(*routing.Config[int]){
		"Resolve": func(cfg *routing.Config[int]) { cfg.Resolve = nil },
		"Open":    func(cfg *routing.Config[int]) { cfg.Open = nil },
		"Close":   func(cfg *routing.Config[int]) { cfg.Close = nil },
	} {
		cfg := c.config()
		drop(&cfg)
		if _, err := routing.New(cfg); err == nil {
			t.Errorf("a Config without %s accepted", name)
		}
	}
}

func acquire(t *testing.T, p *routing.Pools[int]) {
	t.Helper()
	_, release, err := p.AcquireFor(context.Background(), tenancytest.TenantA)
	if err != nil {
		t.Fatal(err)
	}
	release()
}

// Zero means the default: 64 pools, and a TTL under which a binding is
// reused rather than resolved on every call.
func TestZeroConfigMeansDefaults(t *testing.T) {
	c := &counted{now: time.Unix(1_000_000, 0)}
	p, err := routing.New(c.config())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.MaxPools() != 64 {
		t.Errorf("MaxPools() = %d, want the default 64", p.MaxPools())
	}
	acquire(t, p)
	acquire(t, p)
	if c.resolves != 1 {
		t.Errorf("%d resolves for two calls within the default TTL, want 1", c.resolves)
	}
}

// A binding is stale from the moment its TTL has passed, not a tick later.
func TestBindingStaleAtExactlyTTL(t *testing.T) {
	c := &counted{now: time.Unix(1_000_000, 0)}
	cfg := c.config()
	cfg.TTL = time.Minute
	p, err := routing.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	acquire(t, p)
	c.now = c.now.Add(time.Minute - time.Nanosecond)
	acquire(t, p)
	if c.resolves != 1 {
		t.Fatalf("%d resolves before the TTL passed, want 1", c.resolves)
	}
	c.now = c.now.Add(time.Nanosecond)
	acquire(t, p)
	if c.resolves != 2 {
		t.Fatalf("%d resolves once the TTL passed, want 2", c.resolves)
	}
}

// MaxTenants bindings are kept; only one more drops the oldest.
func TestMaxTenantsBindingsKept(t *testing.T) {
	c := &counted{now: time.Unix(1_000_000, 0)}
	cfg := c.config()
	cfg.MaxTenants = 2
	p, err := routing.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB, tenancytest.TenantA} {
		_, release, err := p.AcquireFor(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	if c.resolves != 2 {
		t.Fatalf("%d resolves for two tenants under a bound of two, want 2", c.resolves)
	}
}

// Over the bound, the binding dropped is the oldest other tenant's, never
// the one just made.
func TestOverflowDropsTheOldestOtherBinding(t *testing.T) {
	c := &counted{now: time.Unix(1_000_000, 0)}
	cfg := c.config()
	cfg.MaxTenants = 1
	p, err := routing.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB, tenancytest.TenantB} {
		_, release, err := p.AcquireFor(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	if c.resolves != 2 {
		t.Fatalf("%d resolves, want 2: the new binding was dropped instead of the oldest", c.resolves)
	}
}

// Of several other bindings, the least recently used one is dropped.
func TestOverflowDropsTheLeastRecentlyUsed(t *testing.T) {
	c := &counted{now: time.Unix(1_000_000, 0)}
	cfg := c.config()
	cfg.MaxTenants = 2
	p, err := routing.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tenantC := tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB, tenantC, tenancytest.TenantB} {
		_, release, err := p.AcquireFor(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	if c.resolves != 3 {
		t.Fatalf("%d resolves, want 3: B, more recent than A, was dropped", c.resolves)
	}
}
