package redis_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Every route refusal says exactly what to change, naming the config field.
func TestOptionRefusalsSayWhatToChange(t *testing.T) {
	for name, c := range map[string]struct {
		opt fx.Option
		fix string
	}{
		"route name":         {redis.Module("m", modules.FromGraph(), redis.CacheRoute("a b", redis.RouteConfig{})), "rename the route"},
		"global cache":       {redis.Module("m", modules.FromGraph(), redis.CacheRoute("c", redis.RouteConfig{TenantGlobal: true})), "set redis.RouteConfig.TenantGlobal to false on this cache route"},
		"namespaced stream":  {redis.Module("m", modules.FromGraph(), redis.StreamRoute("s", redis.RouteConfig{Namespace: naming.PerTenant("acme")})), "leave redis.RouteConfig.Namespace nil"},
		"short heartbeat":    {redis.Module("m", modules.FromGraph(), redis.FleetRoute("f", redis.FleetConfig{HeartbeatInterval: time.Second, TTL: time.Second})), "set redis.FleetConfig.TTL above HeartbeatInterval (now HeartbeatInterval=1s, TTL=1s)"},
		"TTL, no interval":   {redis.Module("m", modules.FromGraph(), redis.FleetRoute("f", redis.FleetConfig{TTL: time.Second})), "set redis.FleetConfig.HeartbeatInterval"},
		"negative interval":  {redis.Module("m", modules.FromGraph(), redis.FleetRoute("f", redis.FleetConfig{HeartbeatInterval: -time.Second, TTL: time.Second})), "zero or more (now HeartbeatInterval=-1s, TTL=1s)"},
		"consumer no group":  {redis.Module("m", modules.FromGraph(), redis.StreamRoute("s", redis.RouteConfig{TenantAware: true}), redis.StreamConsumer("s", redis.ConsumerConfig{Handle: noop, WorkerConfig: shards.WorkerConfig{Tenants: assigned}})), "set ConsumerConfig.Group"},
		"consumer no handle": {redis.Module("m", modules.FromGraph(), redis.StreamRoute("s", redis.RouteConfig{TenantAware: true}), redis.StreamConsumer("s", redis.ConsumerConfig{Group: "g", WorkerConfig: shards.WorkerConfig{Tenants: assigned}})), "set ConsumerConfig.Handle"},
		"trim no MaxLen":     {redis.Module("m", modules.FromGraph(), redis.StreamRoute("s", redis.RouteConfig{TenantAware: true}), redis.StreamTrim("s", redis.TrimConfig{WorkerConfig: shards.WorkerConfig{Tenants: assigned}})), "set TrimConfig.MaxLen"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, c.opt)
			if !strings.Contains(e.Fix, c.fix) {
				t.Errorf("fix %q lacks %q", e.Fix, c.fix)
			}
		})
	}
}
