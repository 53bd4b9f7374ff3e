package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// familyApp is one replica: every keyed route kind, tagged and namespace.
type familyApp struct {
	fx.In
	Tenants *modules.Tenants
	Tagged  *redis.Counter     `name:"count"`
	NS      *redis.Counter     `name:"countns"`
	Cache   *redis.Cache       `name:"cache"`
	Idem    *redis.Idempotency `name:"idem"`
	Locks   *redis.Locks       `name:"locks"`
	Stream  *redis.Stream      `name:"stream"`
}

func startFamilyApp(t *testing.T, opts *goredis.UniversalOptions, run string) *familyApp {
	t.Helper()
	var r familyApp
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		redis.Module("fam", redis.Connect(opts), modules.AllowTeardown(),
			redis.CounterRoute("count", redis.RouteConfig{TenantAware: true}),
			redis.CounterRoute("countns", redis.RouteConfig{Namespace: naming.PerTenant("fam" + run + "-")}),
			redis.CacheRoute("cache", redis.RouteConfig{TenantAware: true}),
			redis.IdempotencyRoute("idem", redis.RouteConfig{TenantAware: true, TTL: time.Hour}),
			redis.LockRoute("locks", redis.RouteConfig{TenantAware: true}),
			redis.StreamRoute("stream", redis.RouteConfig{TenantAware: true})),
		fx.Populate(&r))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return &r
}

// TestOffboardLeavesNoKeyFamilyBehind, on one server and on the cluster:
// a tenant that used every route kind, AddOnce and stream groups included,
// has no key left after offboarding, and every key it had belongs to a
// declared family. Provisioned again, its AddOnce applies again (its
// markers went with its counters), and ReadGroup and Claim work at once,
// on the replica that offboarded (its group memo dropped) and on another
// that did not (a NOGROUP re-creates the group).
func TestOffboardLeavesNoKeyFamilyBehind(t *testing.T) {
	onEachTopology(t, func(t *testing.T, opts *goredis.UniversalOptions) {
		run := strings.ToLower(tenancytest.FreshTenant(t).Hex()[:8])
		one, other := startFamilyApp(t, opts, run), startFamilyApp(t, opts, run)
		raw := goredis.NewUniversalClient(opts)
		defer raw.Close()
		a := tenancytest.FreshTenant(t)
		ctx := tenancy.WithTenant(context.Background(), a)
		use := func(r *familyApp, round string) {
			t.Helper()
			for _, c := range []*redis.Counter{r.Tagged, r.NS} {
				v, applied, err := c.AddOnce(ctx, "n", "op-1", 1, time.Hour)
				if err != nil || !applied || v != 1 {
					t.Fatalf("%s: AddOnce on %s: %d applied=%v %v", round, c.Name(), v, applied, err)
				}
			}
			if err := r.Cache.Set(ctx, "k", []byte("v"), time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, _, err := r.Idem.Do(ctx, "op", returns("x")); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Locks.Acquire(ctx, "l", time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Stream.Append(ctx, map[string]any{"v": round}); err != nil {
				t.Fatal(err)
			}
		}
		read := func(r *familyApp, round string) {
			t.Helper()
			if _, err := r.Stream.ReadGroup(ctx, "g", "c1", 10, 0); err != nil {
				t.Fatalf("%s: ReadGroup: %v", round, err)
			}
			if _, err := r.Stream.Claim(ctx, "g", "c2", 0, 10); err != nil {
				t.Fatalf("%s: Claim: %v", round, err)
			}
		}
		use(one, "first")
		read(one, "first")
		read(other, "first")
		keys := rawKeys(t, raw, "*"+a.Hex()+"*")
		if len(keys) < 7 {
			t.Fatalf("the tenant's keys: %v", keys)
		}
		for _, k := range keys {
			if _, ok := redis.FamilyOf(k); !ok {
				t.Errorf("key %s belongs to no declared family: offboarding would not find it", k)
			}
		}
		rep, err := one.Tenants.Offboard(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		checked := map[string]bool{}
		for _, f := range rep[0].Checked {
			checked[f.Name] = true
		}
		if !checked["route"] || !checked["once"] || !checked["undeclared"] || len(rep[0].Left) != 0 {
			t.Fatalf("the verifier's report: checked %v, left %v", rep[0].Checked, rep[0].Left)
		}
		if left := rawKeys(t, raw, "*"+a.Hex()+"*"); len(left) != 0 {
			t.Fatalf("keys left after offboarding: %v", left)
		}
		if _, err := one.Tenants.Provision(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		other.Tenants.Resume(a) // its own lifecycle never suspended it
		use(one, "again")
		read(one, "again")
		read(other, "again")
		if _, err := one.Tenants.Offboard(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	})
}
