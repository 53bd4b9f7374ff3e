package redis_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// An app's own invoke asking for any route of a module refused for its
// options gets the module's coded refusal, joined with the other modules'
// violations, wherever the invoke stands: in a module placed before the
// refused one (it runs before the module's check), at the root, or after.
func TestRefusalWinsWhateverTheInvokeOrder(t *testing.T) {
	uses := map[string]fx.Option{
		"cache":       tenancytest.Invoke[*redis.Cache]("c"),
		"counter":     tenancytest.Invoke[*redis.Counter]("n"),
		"idempotency": tenancytest.Invoke[*redis.Idempotency]("i"),
		"lock":        tenancytest.Invoke[*redis.Locks]("l"),
		"pubsub":      tenancytest.Invoke[*redis.PubSub]("p"),
		"stream":      tenancytest.Invoke[*redis.Stream]("s"),
		"fleet":       tenancytest.Invoke[*redis.Fleet]("f"),
	}
	// Every kind the rules know is asked for: a new kind needs its line.
	for kind := range redis.Rules().Kinds {
		if uses[string(kind)] == nil {
			t.Fatalf("kind %s: no invoke asks for its route", kind)
		}
	}
	routes := []redis.Option{
		redis.CacheRoute("c", redis.RouteConfig{TenantAware: true}),
		redis.CounterRoute("n", redis.RouteConfig{TenantAware: true}),
		redis.IdempotencyRoute("i", redis.RouteConfig{TenantAware: true}),
		redis.LockRoute("l", redis.RouteConfig{TenantAware: true}),
		redis.PubSubRoute("p", redis.RouteConfig{TenantAware: true}),
		redis.StreamRoute("s", redis.RouteConfig{TenantAware: true}),
		redis.FleetRoute("f", redis.FleetConfig{}),
	}
	client := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"}) // never dialled: no OnStart runs
	t.Cleanup(func() { _ = client.Close() })
	// The invokes ask for what a module wired right provides.
	for kind, u := range uses {
		if err := fx.New(fx.NopLogger, fx.Module("app", u), redis.Module("kv", append(routes, redis.Use(client))...)).Err(); err != nil {
			t.Fatalf("%s: the wired module does not provide what the test asks for: %v", kind, err)
		}
	}
	// A routed client without a resolver: refused for its options.
	refused := func() fx.Option {
		return redis.Module("kv", append(routes, redis.Routed(nil, redis.RoutedConfig{}))...)
	}
	floorMiss := func() fx.Option {
		return redis.Module("other", redis.Use(client), modules.RequiredIsolation(tenancy.Namespace),
			redis.CacheRoute("weak", redis.RouteConfig{TenantAware: true}))
	}
	tenancytest.RequireRefusedInAnyOrder(t, tenancy.CodeWiringInvalid, "kv", refused(), uses, floorMiss())
}
