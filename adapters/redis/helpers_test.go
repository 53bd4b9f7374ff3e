package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// unreachable is a client config nothing listens on: wiring tests prove
// constructors never dial.
func unreachable() *goredis.UniversalOptions {
	return &goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}}
}

var (
	ctxA = tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxB = tenancy.WithTenant(context.Background(), tenancytest.TenantB)
)

// env is a real Redis client plus a per-run suffix for route names; every
// key a test writes carries the suffix, and cleanup deletes them.
type env struct {
	client *goredis.Client
	suffix string
	// dbs are the databases the routed tests give tenants: A 14, B 15,
	// every other tenant 13, and tenantNoCreds none at all.
	dbs map[int]*goredis.Client
}

var tenantNoCreds = tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")

func newEnv(t testing.TB) *env {
	t.Helper()
	addr := testsvc.RedisAddr(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	e := &env{client: goredis.NewClient(&goredis.Options{Addr: addr}), suffix: hex.EncodeToString(b[:]),
		dbs: map[int]*goredis.Client{}}
	e.dbs[0] = e.client
	for _, db := range []int{13, 14, 15} {
		e.dbs[db] = goredis.NewClient(&goredis.Options{Addr: addr, DB: db})
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for db, c := range e.dbs {
			for _, k := range e.keysIn(t, db) {
				c.Del(ctx, k)
			}
			c.Close()
		}
	})
	return e
}

// routed is the routed client option of the dedicated tier: each tenant
// gets a client of its own on its own database.
func (e *env) routed() redis.Option {
	addr := e.client.Options().Addr
	return redis.Routed(redis.RoutedConfig{
		Resolve: func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
			db := "13"
			switch id {
			case tenancytest.TenantA:
				db = "14"
			case tenancytest.TenantB:
				db = "15"
			case tenantNoCreds:
				return routing.Credentials{}, errNoCreds
			}
			return routing.Credentials{Endpoint: addr, Params: map[string]string{"db": db}}, nil
		},
		PoolSize: 4,
	})
}

var errNoCreds = errors.New("no credentials for this tenant")

// name makes a route name unique to this run.
func (e *env) name(base string) string { return base + "-" + e.suffix }

// keys lists every key this run wrote, in every database it uses.
func (e *env) keys(t testing.TB) []string {
	t.Helper()
	var out []string
	for db := range e.dbs {
		for _, k := range e.keysIn(t, db) {
			out = append(out, fmt.Sprintf("db%d/%s", db, k))
		}
	}
	return out
}

func (e *env) keysIn(t testing.TB, db int) []string {
	t.Helper()
	var out []string
	iter := e.dbs[db].Scan(context.Background(), 0, "tw:*-"+e.suffix+":*", 1000).Iterator()
	for iter.Next(context.Background()) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return out
}

// keysOf lists this run's keys of one route in database 0.
func (e *env) keysOf(t testing.TB, route string) []string {
	var out []string
	for _, k := range e.keysIn(t, 0) {
		if strings.Contains(k, ":"+route+":") {
			out = append(out, k)
		}
	}
	return out
}

// route builds a module holding opts on the env's client and returns the
// route object provided under name. The app is started and stopped with
// the test.
func route[T any](t testing.TB, e *env, name string, opts ...redis.Option) T {
	t.Helper()
	var got T
	app := fx.New(fx.NopLogger,
		redis.Module("m-"+e.suffix, append([]redis.Option{redis.Client(e.client)}, opts...)...),
		fx.Invoke(fx.Annotate(func(v T) { got = v }, fx.ParamTags(`name:"`+name+`"`))),
	)
	if err := app.Err(); err != nil {
		t.Fatalf("fx.New: %v", err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return got
}

// scoped is one tenant-scoped wiring of a route, by tier: route options
// and module options.
type scoped struct {
	tier tenancy.Tier
	opts []redis.RouteOption
	mod  []redis.Option
}

// with returns the module options plus the route.
func (s scoped) with(route redis.Option) []redis.Option {
	return append(append([]redis.Option(nil), s.mod...), route)
}

// keyedTiers are the tenant-scoped tiers of cache, counter, idempotency
// and lock routes.
func keyedTiers(e *env) []scoped {
	return []scoped{
		{tier: tenancy.Tagged, opts: []redis.RouteOption{redis.TenantAware()}},
		{tier: tenancy.Namespace, opts: []redis.RouteOption{redis.PerTenantNamespace(redis.TenantNamespace("ns"))}},
		{tier: tenancy.Dedicated, mod: []redis.Option{e.routed()}},
	}
}

// channelTiers are the tenant-scoped tiers of stream and pub/sub routes,
// which have no namespace.
func channelTiers(e *env) []scoped {
	return []scoped{
		{tier: tenancy.Tagged, opts: []redis.RouteOption{redis.TenantAware()}},
		{tier: tenancy.Dedicated, mod: []redis.Option{e.routed()}},
	}
}
