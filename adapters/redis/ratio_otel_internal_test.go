package redis

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioP11Off: P11, what telemetry costs a GET when the app gives no
// provider: the route's entry (a nil check, then the entry as it was)
// against the entry it wraps, called directly, each followed by the same
// GET. The with-provider pair is in tenantotel.
func TestRatioP11Off(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	cl := goredis.NewClient(&goredis.Options{Addr: testsvc.RedisAddr(t)})
	t.Cleanup(func() { _ = cl.Close() })
	r := newRoute(&core{module: "p11", client: cl}, &routeSpec{name: "p11-otel-off", kind: kindCache, tenantAware: true})
	ctx := tenancy.WithTenant(context.Background(), tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a"))
	_, c, k, done, err := r.target(ctx, "user:42")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	done()
	t.Cleanup(func() { cl.Del(context.Background(), k) })
	get := func(entry func(context.Context, string) (goredis.UniversalClient, string, func(), error)) func(int) {
		return func(n int) {
			for range n {
				c, k, done, err := entry(ctx, "user:42")
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Get(ctx, k).Err(); err != nil {
					t.Fatal(err)
				}
				done()
			}
		}
	}
	// target's context is ctx here (no provider): the pair compares the
	// entries alone.
	ours := func(ctx context.Context, user string) (goredis.UniversalClient, string, func(), error) {
		_, c, k, done, err := r.target(ctx, user)
		return c, k, done, err
	}
	ratio.Report(t, ratio.Pair{Label: "P11", Name: "redis-otel-off", Ours: get(ours), Baseline: get(r.enter), Rounds: 31, Iterations: 500}, 1.01)
}
