package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// setRule runs the rest of the test under a copy of the rules with kind's
// rule edited. Tests using it must not run in parallel.
func setRule(t *testing.T, kind floors.Kind, edit func(*floors.KindRule)) {
	t.Helper()
	testsvc.UseRule(t, &rules, Rules(), kind, edit)
}

// TestCacheScopeFollowsRule: giving the cache kind the rule "the resolver
// is passed the tenant only when tenant-aware" moves the matrix row
// (namespace → none) and the runtime together: the key a call really
// writes leaves the tenant's namespace for the shared key space, and an
// unbound call is no longer refused. A route that decided its scope from
// its own options would move only the matrix.
func TestCacheScopeFollowsRule(t *testing.T) {
	addr := testsvc.RedisAddr(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	defer rdb.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	route, nsPrefix := "dc"+hex.EncodeToString(b[:]), "ns"+hex.EncodeToString(b[:])
	ctx := context.Background()
	defer rdb.Del(ctx, "tw:s:c:"+route+":k", "tw:n:"+nsPrefix+tenancytest.TenantA.Hex()+":c:"+route+":k")

	probe := func(t *testing.T) (tenancy.Tier, error) {
		t.Helper()
		var (
			m floors.Matrix
			c *Cache
		)
		app := fx.New(fx.NopLogger,
			Module("r", Use(rdb), CacheRoute(route, RouteConfig{Namespace: naming.PerTenant(nsPrefix)})),
			fx.Invoke(func(l modules.Live) { m = l.Matrix() }),
			fx.Invoke(fx.Annotate(func(v *Cache) { c = v }, fx.ParamTags(`name:"`+route+`"`))))
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = app.Stop(ctx) }()
		if err := c.Set(tenancy.WithTenant(ctx, tenancytest.TenantA), "k", []byte("a"), time.Minute); err != nil {
			t.Fatal(err)
		}
		return m.Rows[0].Reached, c.Set(ctx, "k", []byte("u"), time.Minute)
	}
	landed := func(t *testing.T, key, want string) {
		t.Helper()
		got, err := rdb.Get(ctx, key).Result()
		if err != nil || got != want {
			t.Errorf("key %s = %q, %v; want %q", key, got, err, want)
		}
		rdb.Del(ctx, key)
	}
	nsKey := "tw:n:" + nsPrefix + tenancytest.TenantA.Hex() + ":c:" + route + ":k"
	sharedKey := "tw:s:c:" + route + ":k"

	reached, unbound := probe(t)
	if reached != tenancy.Namespace {
		t.Errorf("default rule: reached %s, want namespace", reached)
	}
	tenancytest.RequireUnbound(t, unbound, "r", "redis", route)
	landed(t, nsKey, "a")
	if n := rdb.Exists(ctx, sharedKey).Val(); n != 0 {
		t.Errorf("default rule: the shared key exists")
	}

	setRule(t, kindCache, func(r *floors.KindRule) { r.ResolverCountsOnlyWhenTenantAware = true })
	reached, unbound = probe(t)
	if reached != tenancy.None {
		t.Errorf("flipped rule: reached %s, want none", reached)
	}
	if unbound != nil {
		t.Errorf("flipped rule: unbound call refused: %v", unbound)
	}
	// A's write and the unbound one share the key: the unbound one wins.
	landed(t, sharedKey, "u")
	if n := rdb.Exists(ctx, nsKey).Val(); n != 0 {
		t.Errorf("flipped rule: A's namespaced key exists")
	}
}
