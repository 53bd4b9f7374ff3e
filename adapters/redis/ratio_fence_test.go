package redis_test

import (
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRatioP5Fenced measures a tagged GET in an app with modules.Lifecycle
// (every call entered in flight and ended, another tenant suspended)
// against the same GET with no lifecycle: the in-flight register's cost
// on the hot path.
func TestRatioP5Fenced(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	e := newEnv(t)
	name := e.name("p5fence")
	plain := route[*redis.Cache](t, e, name, redis.CacheRoute(name, redis.RouteConfig{TenantAware: true}))
	var fenced *redis.Cache
	var tn *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		redis.Module("f-"+e.suffix, e.source([]redis.Option{redis.CacheRoute(name, redis.RouteConfig{TenantAware: true})})...),
		fx.Invoke(fx.Annotate(func(v *redis.Cache) { fenced = v }, fx.ParamTags(`name:"`+name+`"`))), fx.Populate(&tn))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	tn.Suspend(tenancytest.TenantB)
	if err := plain.Set(ctxA, "user:42", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	get := func(c *redis.Cache) func(int) {
		return func(n int) {
			for range n {
				if _, _, err := c.Get(ctxA, "user:42"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	ratio.Report(t, ratio.Pair{Label: "P5", Name: "redis-tagged-get-fenced", Ours: get(fenced), Baseline: get(plain), Rounds: 31, Iterations: 500}, 1.05)
}
