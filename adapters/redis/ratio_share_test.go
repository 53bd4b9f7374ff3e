package redis_test

import (
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioP14Share is the cost of a tenant share on the call entry: a
// tagged GET of a module with modules.TenantShare against the same GET of
// a module without, both with the lifecycle, at 1 tenant, at 10,000
// tenants read round-robin, and from 64 goroutines over 10,000 tenants.
// The share never refuses here (64 calls), so the pair measures its check.
func TestRatioP14Share(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	e := newEnv(t)
	name := e.name("p14share")
	cache := func(module string, share bool) *redis.Cache {
		var c *redis.Cache
		opts := []fx.Option{fx.NopLogger, modules.Lifecycle(),
			redis.Module(module, e.source([]redis.Option{redis.CacheRoute(name, redis.RouteConfig{TenantAware: true})})...),
			fx.Invoke(fx.Annotate(func(v *redis.Cache) { c = v }, fx.ParamTags(`name:"`+name+`"`)))}
		if share {
			opts = append(opts, modules.TenantShare(module, modules.Share{Calls: 64}))
		}
		app := fx.New(opts...)
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = app.Stop(context.Background()) })
		return c
	}
	shared, plain := cache("s-"+e.suffix, true), cache("p-"+e.suffix, false)
	ctxs := make([]context.Context, 10000)
	for i, id := range tenants(len(ctxs)) {
		ctxs[i] = tenancy.WithTenant(context.Background(), id)
	}
	if err := plain.Set(ctxs[0], "user:42", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	get := func(c *redis.Cache, tenants int) func(int) {
		k := 0
		return func(n int) {
			for range n {
				if _, _, err := c.Get(ctxs[k%tenants], "user:42"); err != nil {
					t.Fatal(err)
				}
				k++
			}
		}
	}
	ratio.Report(t, ratio.Pair{Label: "P14", Name: "redis-tagged-get-share-1-tenant", Ours: get(shared, 1), Baseline: get(plain, 1), Rounds: 31, Iterations: 500, Step: 10}, 1.03)
	ratio.Report(t, ratio.Pair{Label: "P14", Name: "redis-tagged-get-share-10000-tenants", Ours: get(shared, 10000), Baseline: get(plain, 10000), Rounds: 31, Iterations: 500, Step: 10}, 1.03)
	par := func(c *redis.Cache) func(int) {
		return ratio.ParallelSide(t, 64, 10000, func(k int) error { _, _, err := c.Get(ctxs[k], "user:42"); return err })
	}
	ratio.ReportParallel(t, ratio.Pair{Label: "P14", Name: "redis-tagged-get-share-g64-10000-tenants", Ours: par(shared), Baseline: par(plain), Rounds: 81, Iterations: 2000, Step: 640}, 1.03, 2000)
}
