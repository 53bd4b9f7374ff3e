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
	return routing.WithClock(routing.Config[int]{
		Resolve: func(context.Context, tenancy.ID) (routing.Credentials, error) {
			c.resolves++
			return routing.Credentials{Endpoint: "e", User: "u"}, nil
		},
		Open:  func(context.Context, routing.Credentials) (int, error) { return 1, nil },
		Close: func(int) {},
		// One credential set for every tenant: only a tenant-keyed client
		// may serve them all (the claims have tests of their own).
		TenantKeyed: true,
	}, func() time.Time { return c.now })
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
	if p.MaxClients() != 64 {
		t.Errorf("MaxClients() = %d, want the default 64", p.MaxClients())
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

// The MaxTenants bound: bindings within it are kept; over it, the one
// dropped is the least recently used other tenant's, never the one just made.
// Each case counts resolves: a dropped binding resolves again.
func TestMaxTenantsBound(t *testing.T) {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	c3 := tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")
	for name, tc := range map[string]struct {
		max      int
		calls    []tenancy.ID
		resolves int
	}{
		"within the bound, kept":           {2, []tenancy.ID{a, b, a}, 2},
		"over it, the new binding is kept": {1, []tenancy.ID{a, b, b}, 2},
		"over it, the least recently used": {2, []tenancy.ID{a, b, c3, b}, 3},
	} {
		t.Run(name, func(t *testing.T) {
			c := &counted{now: time.Unix(1_000_000, 0)}
			cfg := c.config()
			cfg.MaxTenants = tc.max
			p, err := routing.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for _, id := range tc.calls {
				_, release, err := p.AcquireFor(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				release()
			}
			if c.resolves != tc.resolves {
				t.Fatalf("%d resolves, want %d", c.resolves, tc.resolves)
			}
		})
	}
}

// A client shared by tenant-keyed tenants stays open while any of them is
// bound to it: evicting one tenant must not retire the others' client,
// whether the survivor bound to it first, later, or moved onto it when its
// credentials changed. Each case counts opens: a retired client reopens.
func TestSharedClientCountsItsTenants(t *testing.T) {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	shared := routing.Credentials{Endpoint: "x"}
	for name, aFirst := range map[string]routing.Credentials{
		"bound to it":   shared,
		"moved onto it": {Endpoint: "y"},
	} {
		t.Run(name, func(t *testing.T) {
			now := time.Unix(1_000_000, 0)
			creds := map[tenancy.ID]routing.Credentials{a: aFirst, b: shared}
			opens := 0
			p, err := routing.New(routing.WithClock(routing.Config[int]{
				Limits:  routing.Limits{TTL: time.Minute},
				Resolve: func(_ context.Context, id tenancy.ID) (routing.Credentials, error) { return creds[id], nil },
				Open: func(context.Context, routing.Credentials) (int, error) {
					opens++
					return opens, nil
				},
				Close:       func(int) {},
				TenantKeyed: true,
			}, func() time.Time { return now }))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			use := func(id tenancy.ID) int {
				t.Helper()
				c, release, err := p.AcquireFor(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				release()
				return c
			}
			use(b)
			use(a)
			if aFirst.Endpoint != shared.Endpoint { // A's credentials change: it moves onto B's client
				creds[a] = shared
				now = now.Add(2 * time.Minute)
				use(b)
				use(a)
			}
			want := opens
			p.Evict(b)
			if got := use(a); got > want || opens != want {
				t.Fatalf("A's client was retired with B's eviction: %d opens, want %d", opens, want)
			}
		})
	}
}
