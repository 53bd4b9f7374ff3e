package redis_test

import (
	"context"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func noop(context.Context, redis.Entry) error { return nil }

func assigned(context.Context) ([]tenancy.ID, error) {
	return []tenancy.ID{tenancytest.TenantA}, nil
}

// Wiring checks need no server: no client is given and none is dialled.
func TestWiresEveryTierWithoutAServer(t *testing.T) {
	tenancytest.RequireWires(t, redis.Module("cache",
		redis.RequiredIsolation(tenancy.Tagged),
		redis.CacheRoute("sessions", redis.TenantAware()),
		redis.CounterRoute("hits", redis.PerTenantNamespace(redis.TenantNamespace("acme"))),
		redis.IdempotencyRoute("idem", redis.TenantAware()),
		redis.LockRoute("locks", redis.TenantAware()),
		redis.LockRoute("leader", redis.TenantGlobal()),
		redis.PubSubRoute("wake", redis.TenantGlobal()),
		redis.PubSubRoute("events", redis.TenantAware()),
		redis.StreamRoute("orders", redis.TenantAware()),
		redis.FleetRoute("replicas"),
	))
}

func TestMatrixRatesEachTier(t *testing.T) {
	var live modules.Live
	tenancytest.RequireWires(t, redis.Module("m",
		redis.CacheRoute("shared"),
		redis.CacheRoute("tagged", redis.TenantAware()),
		redis.CacheRoute("ns", redis.PerTenantNamespace(redis.TenantNamespace("t"))),
		redis.StreamRoute("stream", redis.TenantAware()),
		redis.FleetRoute("fleet"),
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

func TestFleetIsAlwaysTenantGlobal(t *testing.T) {
	for name, opt := range map[string]redis.RouteOption{
		"tenant-aware": redis.TenantAware(),
		"per-tenant":   redis.PerTenantNamespace(redis.TenantNamespace("f")),
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeFleetTenantScoped,
				redis.Module("fleet", redis.FleetRoute("replicas", opt)))
			if e.Route != "replicas" || e.Module != "fleet" || e.Backend != "redis" {
				t.Errorf("refusal names %s/%s/%s", e.Module, e.Backend, e.Route)
			}
		})
	}
}

func TestTenantGlobalLockAndPubSubRefusedWhenScoped(t *testing.T) {
	tenancytest.RequireRefused(t, tenancy.CodeGlobalTenantScoped,
		redis.Module("m", redis.LockRoute("leader", redis.TenantGlobal(), redis.TenantAware())))
	tenancytest.RequireRefused(t, tenancy.CodeGlobalTenantScoped,
		redis.Module("m", redis.LockRoute("leader", redis.TenantGlobal(), redis.PerTenantNamespace(redis.TenantNamespace("x")))))
	tenancytest.RequireRefused(t, tenancy.CodeGlobalTenantScoped,
		redis.Module("m", redis.PubSubRoute("wake", redis.TenantGlobal(), redis.TenantAware())))
}

func TestGlobalRoutesMeetAnyFloor(t *testing.T) {
	tenancytest.RequireWires(t, redis.Module("m", redis.RequiredIsolation(tenancy.Dedicated),
		redis.FleetRoute("replicas"), redis.LockRoute("leader", redis.TenantGlobal())))
}

func TestFloorMisses(t *testing.T) {
	e := tenancytest.RequireRefused(t, tenancy.ValidationFailed("redis"),
		redis.Module("m", redis.RequiredIsolation(tenancy.Namespace), redis.StreamRoute("orders", redis.TenantAware())))
	if e.Reached != tenancy.Tagged || e.Required != tenancy.Namespace || !strings.Contains(e.Fix, "never reach namespace") {
		t.Errorf("stream floor miss: %+v", e)
	}
	tenancytest.RequireRefused(t, tenancy.ValidationFailed("redis"),
		redis.Module("m", redis.RequiredIsolation(tenancy.Tagged), redis.CacheRoute("plain")))
}

func TestUnboundWorkersOverTenantStreamsRefused(t *testing.T) {
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, redis.Module("m",
		redis.StreamRoute("orders", redis.TenantAware()),
		redis.StreamConsumer("orders", redis.ConsumerConfig{Group: "g", Handle: noop})))
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, redis.Module("m",
		redis.StreamRoute("orders", redis.TenantAware()),
		redis.StreamTrim("orders", redis.TrimConfig{MaxLen: 10})))
	// Sharded workers, and unbound ones over a shared stream, wire. fx.New
	// builds the Stream for the worker, so the module needs a client value
	// (go-redis does not dial until the first command).
	client := goredis.NewUniversalClient(unreachable())
	t.Cleanup(func() { client.Close() })
	tenancytest.RequireWires(t, redis.Module("m",
		redis.Client(client),
		redis.StreamRoute("orders", redis.TenantAware()),
		redis.StreamConsumer("orders", redis.ConsumerConfig{Group: "g", Handle: noop, Tenants: assigned}),
		redis.StreamTrim("orders", redis.TrimConfig{MaxLen: 10, Tenants: assigned})))
	tenancytest.RequireWires(t, redis.Module("m",
		redis.Client(client),
		redis.StreamRoute("jobs"),
		redis.StreamConsumer("jobs", redis.ConsumerConfig{Group: "g", Handle: noop})))
}

func TestWiringInvalid(t *testing.T) {
	for name, opt := range map[string]redis.Option{
		"namespace on stream":  redis.StreamRoute("s", redis.PerTenantNamespace(redis.TenantNamespace("x"))),
		"namespace on pubsub":  redis.PubSubRoute("p", redis.PerTenantNamespace(redis.TenantNamespace("x"))),
		"global cache":         redis.CacheRoute("c", redis.TenantGlobal()),
		"route name with ':'":  redis.CacheRoute("a:b"),
		"route name with '{'":  redis.CacheRoute("{a}"),
		"heartbeat on a cache": redis.CacheRoute("c", redis.Heartbeat(1, 2)),
		"worker on no stream":  redis.StreamConsumer("missing", redis.ConsumerConfig{Group: "g", Handle: noop}),
	} {
		t.Run(name, func(t *testing.T) {
			tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, redis.Module("m", opt))
		})
	}
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		redis.Module("m", redis.CacheRoute("same"), redis.CounterRoute("same")))
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		redis.Module("m", redis.StreamRoute("s"), redis.StreamConsumer("s", redis.ConsumerConfig{Handle: noop})))
}
