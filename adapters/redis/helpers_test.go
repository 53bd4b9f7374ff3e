package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/testsvc"
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
}

func newEnv(t testing.TB) *env {
	t.Helper()
	addr := testsvc.RedisAddr(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	e := &env{client: goredis.NewClient(&goredis.Options{Addr: addr}), suffix: hex.EncodeToString(b[:])}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, k := range e.keys(t) {
			e.client.Del(ctx, k)
		}
		e.client.Close()
	})
	return e
}

// name makes a route name unique to this run.
func (e *env) name(base string) string { return base + "-" + e.suffix }

// keys lists every key this run wrote.
func (e *env) keys(t testing.TB) []string {
	t.Helper()
	var out []string
	iter := e.client.Scan(context.Background(), 0, "tw:*-"+e.suffix+":*", 1000).Iterator()
	for iter.Next(context.Background()) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return out
}

// keysOf lists this run's keys of one route.
func (e *env) keysOf(t testing.TB, route string) []string {
	var out []string
	for _, k := range e.keys(t) {
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
		if err := app.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return got
}

// scoped is one tenant-scoped wiring of a route, by tier.
type scoped struct {
	tier tenancy.Tier
	opt  redis.RouteOption
}

func keyedTiers() []scoped {
	return []scoped{
		{tenancy.Tagged, redis.TenantAware()},
		{tenancy.Namespace, redis.PerTenantNamespace(redis.TenantNamespace("ns"))},
	}
}
