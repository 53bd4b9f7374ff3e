package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioScaleRedis: tagged and namespace GET and SET cycling over
// 10,000 tenants against raw go-redis on the same client, whose key is
// built per call from the tenant as hand-written code would build it.
func TestRatioScaleRedis(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	const tenants = 10000
	e := newEnv(t)
	value := []byte("0123456789abcdef0123456789abcdef")
	ctxs := make([]context.Context, tenants)
	for i := range ctxs {
		ctxs[i] = tenancy.WithTenant(context.Background(), tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1)))
	}
	bg := context.Background()
	rawPrefix := "tw:raw-" + e.suffix + ":"
	rawKey := func(i int) string {
		tn, _ := tenancy.Require(ctxs[i])
		return rawPrefix + tn.Hex() + ":user:42"
	}
	for _, tc := range []struct {
		label string
		rc    redis.RouteConfig
	}{
		{"tagged", redis.RouteConfig{TenantAware: true}},
		{"namespace", redis.RouteConfig{Namespace: naming.PerTenant("ns")}},
	} {
		name := e.name("s" + tc.label)
		c := route[*redis.Cache](t, e, name, redis.CacheRoute(name, tc.rc))
		for i := range tenants {
			if err := c.Set(ctxs[i], "user:42", value, 0); err != nil {
				t.Fatal(err)
			}
			if err := e.client.Set(bg, rawKey(i), value, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		label := "S" + strconv.Itoa(tenants)
		// Each side walks every tenant over its rounds (500 a round), so
		// the route's namespace cache (1,024 slots) misses as it would
		// for a service cycling over 10,000 tenants.
		ours, base := ratio.Cycle(tenants), ratio.Cycle(tenants)
		ratio.ReportScale(t, ratio.Pair{Label: label, Name: "redis-" + tc.label + "-get",
			Ours: func(n int) {
				for range n {
					if _, ok, err := c.Get(ctxs[ours()], "user:42"); err != nil || !ok {
						t.Fatal(ok, err)
					}
				}
			},
			Baseline: func(n int) {
				for range n {
					if _, err := e.client.Get(bg, rawKey(base())).Bytes(); err != nil {
						t.Fatal(err)
					}
				}
			},
			Rounds: 31, Iterations: 500,
		}, 1.05)
		ratio.ReportScale(t, ratio.Pair{Label: label, Name: "redis-" + tc.label + "-set",
			Ours: func(n int) {
				for range n {
					if err := c.Set(ctxs[ours()], "user:42", value, 0); err != nil {
						t.Fatal(err)
					}
				}
			},
			Baseline: func(n int) {
				for range n {
					if err := e.client.Set(bg, rawKey(base()), value, 0).Err(); err != nil {
						t.Fatal(err)
					}
				}
			},
			Rounds: 31, Iterations: 500,
		}, 1.05)
	}
}
