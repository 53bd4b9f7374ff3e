package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Redis has no static container name a wiring could set inside a tenant's
// space: a shared route's keys start "tw:s:" and a namespace route's
// "tw:n:<namespace>:", so the scope marker keeps every static key out of
// every tenant's namespace whatever the route and namespace names
// (FuzzKeyInjective proves the whole encoding injective). On the server: a
// shared route named as tenant B's namespace, beside B's namespace route,
// writes the same user key; each reads its own value, and the keys under
// B's namespace are B's only.
func TestStaticKeysOutsideTenantNamespaces(t *testing.T) {
	e := newEnv(t)
	nsB := "q" + tenancytest.TenantB.Hex() // naming.PerTenant("q")'s namespace for B
	sharedName, nsName := nsB+"-"+e.suffix, e.name("quota")
	var shared, perTenant *redis.Cache
	app := fx.New(fx.NopLogger, redis.Module("m-"+e.suffix, redis.Use(e.client),
		redis.CacheRoute(sharedName, redis.RouteConfig{}),
		redis.CacheRoute(nsName, redis.RouteConfig{Namespace: naming.PerTenant("q")})),
		fx.Invoke(fx.Annotate(func(s, p *redis.Cache) { shared, perTenant = s, p },
			fx.ParamTags(`name:"`+sharedName+`"`, `name:"`+nsName+`"`))))
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(ctx) })
	if err := shared.Set(ctx, "k", []byte("shared"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := perTenant.Set(ctxB, "k", []byte("B"), time.Minute); err != nil {
		t.Fatal(err)
	}
	for who, c := range map[string]struct {
		get  func() ([]byte, bool, error)
		want string
	}{
		"shared": {func() ([]byte, bool, error) { return shared.Get(ctx, "k") }, "shared"},
		"B":      {func() ([]byte, bool, error) { return perTenant.Get(ctxB, "k") }, "B"},
	} {
		if v, ok, err := c.get(); err != nil || !ok || string(v) != c.want {
			t.Errorf("%s reads %q (%v, %v), want %q", who, v, ok, err, c.want)
		}
	}
	var inB []string
	for _, k := range e.keysIn(t, 0) {
		if strings.HasPrefix(k, "tw:n:"+nsB+":") {
			inB = append(inB, k)
		}
	}
	if len(inB) != 1 || !strings.Contains(inB[0], ":"+nsName+":") {
		t.Fatalf("keys in B's namespace: %v, want B's one key", inB)
	}
}
