package redis_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// BenchmarkGetScale is one cache GET per op against the real server,
// cycling over 1 or 10,000 tenants: ours on the tagged and namespace tiers
// and raw go-redis building the key per call from the tenant, as the
// scale ratio pairs do. Run with -benchmem (and -cpuprofile) to see where
// ours spends what the baseline does not.
func BenchmarkGetScale(b *testing.B) {
	e := newEnv(b)
	value := []byte("0123456789abcdef0123456789abcdef")
	bg := context.Background()
	for _, tenants := range []int{1, 10000} {
		ctxs := make([]context.Context, tenants)
		for i := range ctxs {
			ctxs[i] = tenancy.WithTenant(bg, tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1)))
		}
		rawPrefix := "tw:raw-" + e.suffix + ":"
		rawKey := func(i int) string {
			tn, _ := tenancy.Require(ctxs[i%tenants])
			return rawPrefix + tn.Hex() + ":user:42"
		}
		for i := range tenants {
			if err := e.client.Set(bg, rawKey(i), value, 0).Err(); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("tenants=%d/baseline", tenants), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := e.client.Get(bg, rawKey(i)).Bytes(); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		for _, tc := range []struct {
			label string
			opt   redis.RouteConfig
		}{
			{"tagged", redis.RouteConfig{TenantAware: true}},
			{"namespace", redis.RouteConfig{Namespace: naming.PerTenant("ns")}},
		} {
			name := e.name(fmt.Sprintf("b%s%d", tc.label, tenants))
			c := route[*redis.Cache](b, e, name, redis.CacheRoute(name, tc.opt))
			for i := range tenants {
				if err := c.Set(ctxs[i], "user:42", value, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(fmt.Sprintf("tenants=%d/%s", tenants, tc.label), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, ok, err := c.Get(ctxs[i%tenants], "user:42"); err != nil || !ok {
						b.Fatal(ok, err)
					}
					i++
				}
			})
		}
	}
}

// TestGetAllocations: a cache GET through the adapter allocates no more
// than raw go-redis building its key per call from the tenant, on the
// tagged tier and on the namespace tier for a tenant in use; a tenant the
// namespace cache does not hold adds only the resolver's string. Counts, not timings: they hold on a busy machine.
func TestGetAllocations(t *testing.T) {
	e := newEnv(t)
	bg := context.Background()
	value := []byte("0123456789abcdef0123456789abcdef")
	const tenants = 2048
	ctxs := make([]context.Context, tenants)
	for i := range ctxs {
		ctxs[i] = tenancy.WithTenant(bg, tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1)))
	}
	rawPrefix := "tw:raw-" + e.suffix + ":"
	rawKey := func(ctx context.Context) string {
		tn, _ := tenancy.Require(ctx)
		return rawPrefix + tn.Hex() + ":user:42"
	}
	if err := e.client.Set(bg, rawKey(ctxA), value, 0).Err(); err != nil {
		t.Fatal(err)
	}
	baseline := testing.AllocsPerRun(200, func() {
		if _, err := e.client.Get(bg, rawKey(ctxA)).Bytes(); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		label string
		opt   redis.RouteConfig
		// extra is what cycling over every tenant may add per GET.
		extra float64
	}{
		{"tagged", redis.RouteConfig{TenantAware: true}, 0},
		{"namespace", redis.RouteConfig{Namespace: naming.PerTenant("ns")}, 1},
	} {
		name := e.name("alloc" + tc.label)
		c := route[*redis.Cache](t, e, name, redis.CacheRoute(name, tc.opt))
		for _, ctx := range ctxs {
			if err := c.Set(ctx, "user:42", value, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Set(ctxA, "user:42", value, 0); err != nil {
			t.Fatal(err)
		}
		get := func(ctx context.Context) {
			if _, ok, err := c.Get(ctx, "user:42"); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		if n := testing.AllocsPerRun(200, func() { get(ctxA) }); n > baseline {
			t.Errorf("%s GET, one tenant: %v allocations, raw go-redis %v", tc.label, n, baseline)
		}
		i := 0
		if n := testing.AllocsPerRun(tenants, func() { get(ctxs[i%tenants]); i++ }); n > baseline+tc.extra {
			t.Errorf("%s GET over %d tenants: %v allocations, raw go-redis %v", tc.label, tenants, n, baseline)
		}
	}
}
