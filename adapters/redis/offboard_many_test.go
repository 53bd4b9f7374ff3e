package redis_test

import (
	"context"
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

// scanCalls is how many SCAN commands the server has run.
func scanCalls(t *testing.T, c *goredis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_scan:calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}

// TestOffboardAllWalksTheKeyspaceOncePerBatch, on a redis-server of its
// own (so the SCAN count is this test's): offboarding 20 tenants with
// OffboardAll walks the keyspace once for them all (Offboard one by one
// walks it seven times a tenant here: six tenant markers and the
// namespace route), and removes every key of theirs on a tagged route, a
// namespace route and a route that is both, read raw afterwards; another
// tenant's keys all stay, one whose user key holds an offboarded tenant's
// hex included.
func TestOffboardAllWalksTheKeyspaceOncePerBatch(t *testing.T) {
	srv := testsvc.StartRedis(t)
	opts := &goredis.UniversalOptions{Addrs: []string{srv.Addr}}
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
			redis.CacheRoute("ns", redis.RouteConfig{Namespace: naming.PerTenant("om-")}),
			redis.CacheRoute("both", redis.RouteConfig{TenantAware: true, Namespace: naming.PerTenant("omb-")})),
		fx.Populate(&r))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	raw := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	defer raw.Close()

	ids := make([]tenancy.ID, 20)
	for i := range ids {
		ids[i] = tenancytest.FreshTenant(t)
	}
	keep := tenancytest.FreshTenant(t)
	set := func(id tenancy.ID, keys ...string) {
		for _, c := range []*redis.Cache{r.Tagged, r.NS, r.Both} {
			for _, k := range keys {
				if err := c.Set(tenancy.WithTenant(context.Background(), id), k, []byte("v"), time.Hour); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, id := range ids {
		set(id, "a", "b", "c")
	}
	set(keep, "k", "x:"+ids[0].Hex()+":y")
	before := rawKeys(t, raw, "*")
	if len(before) != 186 {
		t.Fatalf("%d keys before, want 186 (20 tenants × 3 routes × 3, and 6)", len(before))
	}
	var kept []string
	for _, k := range before {
		if strings.Contains(k, keep.Hex()) {
			kept = append(kept, k)
		}
	}

	scans := scanCalls(t, raw)
	rep := r.Tenants.OffboardAll(context.Background(), ids, migrate.Options{Concurrency: 1})
	if rep.Done != len(ids) || len(rep.Failures) != 0 {
		t.Fatalf("offboard: %+v", rep)
	}
	if n := scanCalls(t, raw) - scans; n != 1 {
		t.Errorf("offboarding 20 tenants ran %d SCANs, want one walk of one page", n)
	}
	if after := rawKeys(t, raw, "*"); !slices.Equal(sorted(after), sorted(kept)) {
		t.Errorf("keys after offboarding: %v, want only the other tenant's %v", after, kept)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
