package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioConcRedis: C<tenants>, tagged and namespace GET from G
// goroutines (64, and 8 as "-g8") vs raw go-redis GET on the same client
// (so the same connection pool), its key built per call as hand-written
// code would build it, over 1, 1,000 and 10,000 tenants. Each side walks
// on through the tenants where its last round stopped.
func TestRatioConcRedis(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	e := newEnv(t)
	for _, tenants := range []int{1, 1000, 10000} {
		t.Run(strconv.Itoa(tenants), func(t *testing.T) { concRedis(t, e, tenants) })
	}
}

// concRedis reports the pairs at one tenant count, a subtest per route and
// G, so that -run can pick one pair to profile (see ratio.ProfileEnv).
func concRedis(t *testing.T, e *env, tenants int) {
	value := []byte("0123456789abcdef0123456789abcdef")
	bg := context.Background()
	rawPrefix := "tw:raw-" + e.suffix + ":"
	ctxs := make([]context.Context, tenants)
	for i := range ctxs {
		ctxs[i] = tenancy.WithTenant(bg, tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1)))
	}
	rawKey := func(i int) string {
		tn, _ := tenancy.Require(ctxs[i])
		return rawPrefix + tn.Hex() + ":user:42"
	}
	for i := range tenants {
		if err := e.client.Set(bg, rawKey(i), value, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		label string
		rc    redis.RouteConfig
	}{
		{"tagged", redis.RouteConfig{TenantAware: true}},
		{"namespace", redis.RouteConfig{Namespace: naming.PerTenant("ns")}},
	} {
		t.Run(tc.label, func(t *testing.T) {
			name := e.name("c" + strconv.Itoa(tenants) + tc.label)
			c := route[*redis.Cache](t, e, name, redis.CacheRoute(name, tc.rc))
			for i := range tenants {
				if err := c.Set(ctxs[i], "user:42", value, 0); err != nil {
					t.Fatal(err)
				}
			}
			ours := func(i int) error {
				if _, ok, err := c.Get(ctxs[i], "user:42"); err != nil || !ok {
					return fmt.Errorf("get: found %v, %v", ok, err)
				}
				return nil
			}
			hand := func(i int) error {
				_, err := e.client.Get(bg, rawKey(i)).Bytes()
				return err
			}
			for _, g := range []int{64, 8} {
				n := "redis-" + tc.label + "-get"
				if g != 64 {
					n += "-g" + strconv.Itoa(g)
				}
				t.Run("g"+strconv.Itoa(g), func(t *testing.T) {
					ratio.ReportParallel(t, ratio.Pair{Label: "C" + strconv.Itoa(tenants), Name: n, Iterations: 5000, Rounds: 11, Cap: 30 * time.Second,
						Ours: ratio.ParallelSide(t, g, tenants, ours), Baseline: ratio.ParallelSide(t, g, tenants, hand)}, 1.05, 25000)
				})
			}
		})
	}
}
