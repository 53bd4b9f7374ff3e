package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
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
// key a test writes carries the suffix, and cleanup deletes them. With
// TENANTWIRE_REDIS_CLUSTER set the client is go-redis's cluster client on
// that cluster (the Makefile's second run of this package), otherwise a
// plain client on the single test server.
type env struct {
	client goredis.UniversalClient
	// addrs is the single server's address, or the cluster's seeds.
	addrs   []string
	cluster bool
	suffix  string
	// dbs are the databases the routed tests give tenants (routedDB): on
	// the single server A 14, B 15, every other tenant 13, and
	// tenantNoCreds none at all; a cluster has only database 0.
	dbs map[int]goredis.UniversalClient
	// routedOpt is the one routed option the env hands out.
	routedOpt redis.Option
}

var tenantNoCreds = tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")

func newEnv(t testing.TB) *env {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	e := &env{suffix: hex.EncodeToString(b[:]), dbs: map[int]goredis.UniversalClient{}}
	if os.Getenv(testsvc.RedisClusterEnv) != "" {
		e.addrs, e.cluster = testsvc.RedisCluster(t), true
		cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: e.addrs})
		// The cluster client makes a client per node on first contact, each
		// with housekeeping goroutines: meet every node now, so that tests
		// checking for leaked goroutines see them as already there.
		err := cc.ForEachShard(context.Background(), func(ctx context.Context, c *goredis.Client) error {
			return c.Ping(ctx).Err()
		})
		if err != nil {
			t.Fatalf("redis cluster: %v", err)
		}
		e.client = cc
		e.dbs[0] = cc
	} else {
		addr := testsvc.RedisAddr(t)
		e.addrs = []string{addr}
		e.client = goredis.NewClient(&goredis.Options{Addr: addr})
		e.dbs[0] = e.client
		for _, db := range []int{13, 14, 15} {
			e.dbs[db] = goredis.NewClient(&goredis.Options{Addr: addr, DB: db})
		}
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

// skipOnCluster skips a test that needs what only a single server has.
func (e *env) skipOnCluster(t testing.TB, why string) {
	t.Helper()
	if e.cluster {
		t.Skip("SKIPPED on the Redis Cluster run: " + why)
	}
}

// routedDB is the database the routed tests give tenant id.
func (e *env) routedDB(id tenancy.ID) int {
	switch {
	case e.cluster:
		return 0
	case id == tenancytest.TenantA:
		return 14
	case id == tenancytest.TenantB:
		return 15
	}
	return 13
}

// creds are the credentials of database db on the env's server or cluster
// (comma-separated seeds make the default Open build a cluster client).
func (e *env) creds(db int) routing.Credentials {
	c := routing.Credentials{Endpoint: strings.Join(e.addrs, ",")}
	if !e.cluster {
		c.Params = map[string]string{"db": strconv.Itoa(db)}
	}
	return c
}

// routed is the routed client option of the dedicated tier: each tenant
// gets a client of its own on its own database (on a cluster, the tenants
// share it and their keys carry the tenant).
func (e *env) routed() redis.Option {
	if e.routedOpt == nil {
		e.routedOpt = routedSource(redis.Routed(func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
			if id == tenantNoCreds {
				return routing.Credentials{}, errNoCreds
			}
			return e.creds(e.routedDB(id)), nil
		}, redis.RoutedConfig{
			Limits: routing.Limits{MaxConnsPerClient: 4},
		}))
	}
	return e.routedOpt
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
	ctx := context.Background()
	scan := func(c goredis.UniversalClient) ([]string, error) {
		var out []string
		iter := c.Scan(ctx, 0, "tw:*-"+e.suffix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			out = append(out, iter.Val())
		}
		return out, iter.Err()
	}
	cc, ok := e.dbs[db].(*goredis.ClusterClient)
	if !ok {
		out, err := scan(e.dbs[db])
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		return out
	}
	// SCAN walks one node: a cluster's keys are the union over its masters.
	var mu sync.Mutex
	var out []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error {
		ks, err := scan(node)
		mu.Lock()
		out = append(out, ks...)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	slices.Sort(out)
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

// routedOption is a redis.Routed option tests made, which source
// recognises: a module takes one connection source.
type routedOption struct{ redis.Option }

// routedSource marks o, a redis.Routed option, as a module's source.
func routedSource(o redis.Option) redis.Option { return routedOption{o} }

// source is opts with the env's client as the module's connection source,
// unless opts hold a routed option marked by routedSource.
func (e *env) source(opts []redis.Option) []redis.Option {
	for _, o := range opts {
		if _, ok := o.(routedOption); ok {
			return opts
		}
	}
	return append([]redis.Option{redis.Use(e.client)}, opts...)
}

// route builds a module holding opts on the env's client and returns the
// route object provided under name. The app is started and stopped with
// the test.
func route[T any](t testing.TB, e *env, name string, opts ...redis.Option) T {
	t.Helper()
	var got T
	susp := &modules.Suspensions{}
	app := fx.New(fx.NopLogger, fx.Supply(susp),
		redis.Module("m-"+e.suffix, e.source(opts)...),
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
	suspensionsOf.Store(any(got), susp)
	return got
}

// suspensionsOf is the suspended set of the app route built each route
// object in, for the conformance kit's suspension check.
var suspensionsOf sync.Map

// suspended sets p.Suspensions to the set of obj's app.
func suspended(p tenancytest.Probe, obj any) tenancytest.Probe {
	if s, ok := suspensionsOf.Load(obj); ok {
		p.Suspensions = s.(*modules.Suspensions)
	}
	return p
}

// scoped is one tenant-scoped wiring of a route, by tier: route config
// and module options.
type scoped struct {
	tier  tenancy.Tier
	route redis.RouteConfig
	mod   []redis.Option
}

// with returns the module options plus the route.
func (s scoped) with(route redis.Option) []redis.Option {
	return append(append([]redis.Option(nil), s.mod...), route)
}

// keyedTiers are the tenant-scoped tiers of cache, counter, idempotency
// and lock routes.
func keyedTiers(e *env) []scoped {
	return []scoped{
		{tier: tenancy.Tagged, route: redis.RouteConfig{TenantAware: true}},
		{tier: tenancy.Namespace, route: redis.RouteConfig{Namespace: naming.PerTenant("ns")}},
		{tier: tenancy.Dedicated, mod: []redis.Option{e.routed()}},
	}
}

// channelTiers are the tenant-scoped tiers of stream and pub/sub routes,
// which have no namespace.
func channelTiers(e *env) []scoped {
	return []scoped{
		{tier: tenancy.Tagged, route: redis.RouteConfig{TenantAware: true}},
		{tier: tenancy.Dedicated, mod: []redis.Option{e.routed()}},
	}
}

// returns is an idempotent operation whose result is v.
func returns(v string) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) { return []byte(v), nil }
}

// onEachTopology runs test on the single server and again on the Redis
// Cluster, each a subtest given its client options.
func onEachTopology(t *testing.T, test func(t *testing.T, opts *goredis.UniversalOptions)) {
	t.Run("single", func(t *testing.T) {
		test(t, &goredis.UniversalOptions{Addrs: []string{testsvc.RedisAddr(t)}})
	})
	t.Run("cluster", func(t *testing.T) {
		test(t, &goredis.UniversalOptions{Addrs: testsvc.RedisCluster(t)})
	})
}
