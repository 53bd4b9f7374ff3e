package redis_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Every option refusal says exactly what to change, naming the option.
func TestOptionRefusalsSayWhatToChange(t *testing.T) {
	for name, c := range map[string]struct {
		opt fx.Option
		fix string
	}{
		"route name":         {redis.Module("m", redis.CacheRoute("a b")), "rename the route"},
		"global cache":       {redis.Module("m", redis.CacheRoute("c", redis.TenantGlobal())), "drop redis.TenantGlobal() from this cache route"},
		"namespaced stream":  {redis.Module("m", redis.StreamRoute("s", redis.PerTenantNamespace(redis.TenantNamespace("acme")))), "drop redis.PerTenantNamespace"},
		"short heartbeat":    {redis.Module("m", redis.FleetRoute("f", redis.Heartbeat(time.Second, time.Second))), "ttl above every (now every=1s, ttl=1s)"},
		"heartbeat on cache": {redis.Module("m", redis.CacheRoute("c", redis.Heartbeat(time.Second, 3*time.Second))), "drop redis.Heartbeat from this cache route"},
		"replica on cache":   {redis.Module("m", redis.CacheRoute("c", redis.Replica("r1"))), "drop redis.Replica from this cache route"},
		"consumer no group":  {redis.Module("m", redis.StreamRoute("s", redis.TenantAware()), redis.StreamConsumer("s", redis.ConsumerConfig{Handle: noop, Tenants: assigned})), "set ConsumerConfig.Group"},
		"consumer no handle": {redis.Module("m", redis.StreamRoute("s", redis.TenantAware()), redis.StreamConsumer("s", redis.ConsumerConfig{Group: "g", Tenants: assigned})), "set ConsumerConfig.Handle"},
		"trim no MaxLen":     {redis.Module("m", redis.StreamRoute("s", redis.TenantAware()), redis.StreamTrim("s", redis.TrimConfig{Tenants: assigned})), "set TrimConfig.MaxLen"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, c.opt)
			if !strings.Contains(e.Fix, c.fix) {
				t.Errorf("fix %q lacks %q", e.Fix, c.fix)
			}
		})
	}
}
