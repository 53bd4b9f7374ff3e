package redis_test

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/naming"
)

// TestRatioP5 measures tagged and namespace GET and SET against raw
// go-redis on the same client. The baseline uses a precomputed key of the
// same length, so it pays for no key building at all: the strictest
// comparison.
func TestRatioP5(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	e := newEnv(t)
	value := []byte("0123456789abcdef0123456789abcdef")
	for _, tc := range []struct {
		label string
		rc    redis.RouteConfig
	}{
		{"tagged", redis.RouteConfig{TenantAware: true}},
		{"namespace", redis.RouteConfig{Namespace: naming.PerTenant("acme")}},
	} {
		name := e.name("p5" + tc.label)
		c := route[*redis.Cache](t, e, name, redis.CacheRoute(name, tc.rc))
		if err := c.Set(ctxA, "user:42", value, 0); err != nil {
			t.Fatal(err)
		}
		ours := e.keysOf(t, name)
		if len(ours) != 1 {
			t.Fatalf("keys %v", ours)
		}
		raw := "tw:raw-" + e.suffix + ":" + ours[0][len("tw:raw-"+e.suffix+":"):] // same length
		if err := e.client.Set(context.Background(), raw, value, 0).Err(); err != nil {
			t.Fatal(err)
		}
		bg := context.Background()
		ratio.Report(t, ratio.Pair{Label: "P5", Name: "redis-" + tc.label + "-get",
			Ours: func(n int) {
				for range n {
					if _, _, err := c.Get(ctxA, "user:42"); err != nil {
						t.Fatal(err)
					}
				}
			},
			Baseline: func(n int) {
				for range n {
					if _, err := e.client.Get(bg, raw).Bytes(); err != nil {
						t.Fatal(err)
					}
				}
			},
			Rounds: 31, Iterations: 500,
		}, 1.05)
		ratio.Report(t, ratio.Pair{Label: "P5", Name: "redis-" + tc.label + "-set",
			Ours: func(n int) {
				for range n {
					if err := c.Set(ctxA, "user:42", value, 0); err != nil {
						t.Fatal(err)
					}
				}
			},
			Baseline: func(n int) {
				for range n {
					if err := e.client.Set(bg, raw, value, 0).Err(); err != nil {
						t.Fatal(err)
					}
				}
			},
			Rounds: 31, Iterations: 500,
		}, 1.05)
		e.client.Del(bg, raw)
	}
}
