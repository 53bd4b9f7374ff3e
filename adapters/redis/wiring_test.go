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
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func noop(context.Context, redis.Entry) error { return nil }

func assigned(context.Context) ([]tenancy.ID, error) {
	return []tenancy.ID{tenancytest.TenantA}, nil
}

// Wiring checks need no server: no client is given and none is dialled.
func TestWiresEveryTierWithoutAServer(t *testing.T) {
	tenancytest.RequireWires(t, redis.Module("cache", modules.FromGraph(),
		modules.RequiredIsolation(tenancy.Tagged),
		redis.CacheRoute("sessions", redis.RouteConfig{TenantAware: true}),
		redis.CounterRoute("hits", redis.RouteConfig{Namespace: naming.PerTenant("acme")}),
		redis.IdempotencyRoute("idem", redis.RouteConfig{TenantAware: true}),
		redis.LockRoute("locks", redis.RouteConfig{TenantAware: true}),
		redis.LockRoute("leader", redis.RouteConfig{TenantGlobal: true}),
		redis.PubSubRoute("wake", redis.RouteConfig{TenantGlobal: true}),
		redis.PubSubRoute("events", redis.RouteConfig{TenantAware: true}),
		redis.StreamRoute("orders", redis.RouteConfig{TenantAware: true}),
		redis.FleetRoute("replicas", redis.FleetConfig{}),
	))
}

func TestMatrixRatesEachTier(t *testing.T) {
	var live modules.Live
	tenancytest.RequireWires(t, redis.Module("m", modules.FromGraph(),
		redis.CacheRoute("shared", redis.RouteConfig{}),
		redis.CacheRoute("tagged", redis.RouteConfig{TenantAware: true}),
		redis.CacheRoute("ns", redis.RouteConfig{Namespace: naming.PerTenant("t")}),
		redis.StreamRoute("stream", redis.RouteConfig{TenantAware: true}),
		redis.FleetRoute("fleet", redis.FleetConfig{}),
	), fx.Populate(&live))
	got := map[string]tenancy.Tier{}
	for _, r := range live.Matrix().Rows {
		got[r.Route] = r.Reached
	}
	want := map[string]tenancy.Tier{"shared": tenancy.None, "tagged": tenancy.Tagged, "ns": tenancy.Namespace,
		"stream": tenancy.Tagged, "fleet": tenancy.None}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("route %s reaches %s, want %s", k, got[k], v)
		}
	}
}

func TestTenantGlobalLockAndPubSubRefusedWhenScoped(t *testing.T) {
	tenancytest.RequireRefused(t, tenancy.CodeGlobalTenantScoped,
		redis.Module("m", modules.FromGraph(), redis.LockRoute("leader", redis.RouteConfig{TenantGlobal: true, TenantAware: true})))
	tenancytest.RequireRefused(t, tenancy.CodeGlobalTenantScoped,
		redis.Module("m", modules.FromGraph(), redis.LockRoute("leader", redis.RouteConfig{TenantGlobal: true, Namespace: naming.PerTenant("x")})))
	tenancytest.RequireRefused(t, tenancy.CodeGlobalTenantScoped,
		redis.Module("m", modules.FromGraph(), redis.PubSubRoute("wake", redis.RouteConfig{TenantGlobal: true, TenantAware: true})))
}

func TestGlobalRoutesMeetAnyFloor(t *testing.T) {
	tenancytest.RequireWires(t, redis.Module("m", modules.FromGraph(), modules.RequiredIsolation(tenancy.Dedicated),
		redis.FleetRoute("replicas", redis.FleetConfig{}), redis.LockRoute("leader", redis.RouteConfig{TenantGlobal: true})))
}

func TestFloorMisses(t *testing.T) {
	e := tenancytest.RequireRefused(t, tenancy.ValidationFailed("redis"),
		redis.Module("m", modules.FromGraph(), modules.RequiredIsolation(tenancy.Namespace), redis.StreamRoute("orders", redis.RouteConfig{TenantAware: true})))
	if e.Reached != tenancy.Tagged || e.Required != tenancy.Namespace || !strings.Contains(e.Fix, "never reach namespace") {
		t.Errorf("stream floor miss: %+v", e)
	}
	tenancytest.RequireRefused(t, tenancy.ValidationFailed("redis"),
		redis.Module("m", modules.FromGraph(), modules.RequiredIsolation(tenancy.Tagged), redis.CacheRoute("plain", redis.RouteConfig{})))
}

func TestUnboundWorkersOverTenantStreamsRefused(t *testing.T) {
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, redis.Module("m", modules.FromGraph(),
		redis.StreamRoute("orders", redis.RouteConfig{TenantAware: true}),
		redis.StreamConsumer("orders", redis.ConsumerConfig{Group: "g", Handle: noop})))
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, redis.Module("m", modules.FromGraph(),
		redis.StreamRoute("orders", redis.RouteConfig{TenantAware: true}),
		redis.StreamTrim("orders", redis.TrimConfig{MaxLen: 10})))
	// Sharded workers, and unbound ones over a shared stream, wire. fx.New
	// builds the Stream for the worker, so the module needs a client value
	// (go-redis does not dial until the first command).
	client := goredis.NewUniversalClient(unreachable())
	t.Cleanup(func() { client.Close() })
	tenancytest.RequireWires(t, redis.Module("m",
		redis.Use(client),
		redis.StreamRoute("orders", redis.RouteConfig{TenantAware: true}),
		redis.StreamConsumer("orders", redis.ConsumerConfig{Group: "g", Handle: noop, WorkerConfig: shards.WorkerConfig{Tenants: assigned}}),
		redis.StreamTrim("orders", redis.TrimConfig{MaxLen: 10, WorkerConfig: shards.WorkerConfig{Tenants: assigned}})))
	tenancytest.RequireWires(t, redis.Module("m",
		redis.Use(client),
		redis.StreamRoute("jobs", redis.RouteConfig{}),
		redis.StreamConsumer("jobs", redis.ConsumerConfig{Group: "g", Handle: noop})))
}

func TestWiringInvalid(t *testing.T) {
	for name, opt := range map[string]redis.Option{
		"namespace on stream":       redis.StreamRoute("s", redis.RouteConfig{Namespace: naming.PerTenant("x")}),
		"namespace on pubsub":       redis.PubSubRoute("p", redis.RouteConfig{Namespace: naming.PerTenant("x")}),
		"global cache":              redis.CacheRoute("c", redis.RouteConfig{TenantGlobal: true}),
		"route name with ':'":       redis.CacheRoute("a:b", redis.RouteConfig{}),
		"route name with '{'":       redis.CacheRoute("{a}", redis.RouteConfig{}),
		"heartbeat TTL <= interval": redis.FleetRoute("f", redis.FleetConfig{HeartbeatInterval: 2, TTL: 2}),
		"heartbeat TTL alone":       redis.FleetRoute("f", redis.FleetConfig{TTL: 2}),
		"negative heartbeat TTL":    redis.FleetRoute("f", redis.FleetConfig{HeartbeatInterval: 1, TTL: -2}),
		"worker on no stream":       redis.StreamConsumer("missing", redis.ConsumerConfig{Group: "g", Handle: noop}),
		"TTL on a cache":            redis.CacheRoute("c", redis.RouteConfig{TTL: time.Minute}),
		"shared namespace":          redis.CacheRoute("c", redis.RouteConfig{Namespace: naming.Shared("x")}),
		"negative idempotency TTL":  redis.IdempotencyRoute("i", redis.RouteConfig{TTL: -time.Minute}),
	} {
		t.Run(name, func(t *testing.T) {
			tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, redis.Module("m", modules.FromGraph(), opt))
		})
	}
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		redis.Module("m", modules.FromGraph(), redis.CacheRoute("same", redis.RouteConfig{}), redis.CounterRoute("same", redis.RouteConfig{})))
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		redis.Module("m", modules.FromGraph(), redis.StreamRoute("s", redis.RouteConfig{}), redis.StreamConsumer("s", redis.ConsumerConfig{Handle: noop})))
}
