package redis_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// rawKeys reads every key matching pattern on every master.
func rawKeys(t *testing.T, c goredis.UniversalClient, pattern string) []string {
	t.Helper()
	var keys []string
	scan := func(ctx context.Context, n *goredis.Client) error {
		it := n.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		return it.Err()
	}
	var err error
	if cc, ok := c.(*goredis.ClusterClient); ok {
		var mu = make(chan struct{}, 1)
		err = cc.ForEachMaster(context.Background(), func(ctx context.Context, n *goredis.Client) error {
			mu <- struct{}{}
			defer func() { <-mu }()
			return scan(ctx, n)
		})
	} else {
		err = scan(context.Background(), c.(*goredis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// TestOffboardUnlinksEveryKeyOfTheTenant, on one server and on the
// cluster: offboarding deletes the tenant's keys of a tagged route, a
// namespace route and a namespace route that also tags (more keys than a
// SCAN page), read raw on every master afterwards; the other tenant's
// keys stay, even one whose user key holds ":<the tenant's hex>:".
func TestOffboardUnlinksEveryKeyOfTheTenant(t *testing.T) {
	onEachTopology(t, func(t *testing.T, opts *goredis.UniversalOptions) {
		run := strings.ToLower(tenancytest.FreshTenant(t).Hex()[:8])
		var r struct {
			fx.In
			Tenants *modules.Tenants
			Tagged  *redis.Cache `name:"tagged"`
			NS      *redis.Cache `name:"ns"`
			Both    *redis.Cache `name:"both"`
		}
		app := fx.New(fx.NopLogger, modules.Lifecycle(),
			redis.Module("cache", redis.Connect(opts), modules.AllowTeardown(),
				redis.CacheRoute("tagged", redis.RouteConfig{TenantAware: true}),
				redis.CacheRoute("ns", redis.RouteConfig{Namespace: naming.PerTenant("ob" + run + "-")}),
				redis.CacheRoute("both", redis.RouteConfig{TenantAware: true, Namespace: naming.PerTenant("ob" + run + "b-")})),
			fx.Populate(&r))
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = app.Stop(context.Background()) })
		raw := goredis.NewUniversalClient(opts)
		defer raw.Close()
		a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
		t.Cleanup(func() {
			r.Tenants.Resume(b)
			_, _ = r.Tenants.Offboard(context.Background(), b)
		})
		ca, cb := tenancy.WithTenant(context.Background(), a), tenancy.WithTenant(context.Background(), b)
		for i := range 700 {
			k := strconv.Itoa(i)
			for _, c := range []*redis.Cache{r.Tagged, r.NS, r.Both} {
				if err := c.Set(ca, k, []byte("v"), time.Hour); err != nil {
					t.Fatal(err)
				}
			}
		}
		tricky := "x:" + a.Hex() + ":y"
		for _, c := range []*redis.Cache{r.Tagged, r.NS, r.Both} {
			for _, k := range []string{"k", tricky} {
				if err := c.Set(cb, k, []byte("v"), time.Hour); err != nil {
					t.Fatal(err)
				}
			}
		}
		bKeys := func() []string {
			return rawKeys(t, raw, "tw:*"+b.Hex()+"*")
		}
		beforeB := bKeys()
		if len(beforeB) != 6 {
			t.Fatalf("B's keys before: %v", beforeB)
		}
		for range 2 { // a rerun finds nothing left and succeeds
			if rep, err := r.Tenants.Offboard(context.Background(), a); err != nil || len(rep) != 1 {
				t.Fatalf("offboard: %+v %v", rep, err)
			}
		}
		if left := rawKeys(t, raw, "tw:*"+a.Hex()+"*"); len(left) != 3 {
			// B's tricky key on each route holds A's hex in its
			// user part; nothing else may be left.
			t.Errorf("keys naming A after offboarding: %v", left)
		} else {
			for _, k := range left {
				if !strings.Contains(k, b.Hex()) {
					t.Errorf("A's key left: %s", k)
				}
			}
		}
		if left := rawKeys(t, raw, "tw:n:ob"+run+"-"+a.Hex()+":*"); len(left) != 0 {
			t.Errorf("A's namespace keys after offboarding: %v", left)
		}
		if afterB := bKeys(); !slices.Equal(afterB, beforeB) {
			t.Errorf("B's keys changed: %v, were %v", afterB, beforeB)
		}
		if n := len(rawKeys(t, raw, "tw:n:ob"+run+"-"+b.Hex()+":*")); n != 2 {
			t.Errorf("B's namespace keys: %d, want 2", n)
		}
	})
}

// TestRedisOffboardNeedsAllowTeardown: without AllowTeardown offboarding
// refuses and the keys stay.
func TestRedisOffboardNeedsAllowTeardown(t *testing.T) {
	opts := &goredis.UniversalOptions{Addrs: []string{testsvc.RedisAddr(t)}}
	var r struct {
		fx.In
		Tenants *modules.Tenants
		Tagged  *redis.Cache `name:"tagged"`
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		redis.Module("cache", redis.Connect(opts), redis.CacheRoute("tagged", redis.RouteConfig{TenantAware: true})), fx.Populate(&r))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	a := tenancytest.FreshTenant(t)
	ca := tenancy.WithTenant(context.Background(), a)
	if err := r.Tagged.Set(ca, "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Tenants.Offboard(context.Background(), a); !errors.Is(err, migrate.ErrTeardownDisabled) {
		t.Fatalf("offboard without AllowTeardown: %v", err)
	}
	r.Tenants.Resume(a)
	if _, ok, err := r.Tagged.Get(ca, "k"); err != nil || !ok {
		t.Errorf("key after a refused offboarding: %v %v", ok, err)
	}
	_, _ = r.Tagged.Delete(ca, "k")
}
