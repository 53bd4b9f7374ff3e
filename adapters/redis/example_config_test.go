package redis_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Each route is declared with a RouteConfig (a fleet with a FleetConfig);
// its fields decide the tier. The dry run checks the wiring without a
// server: a stream has no per-tenant key namespace, so that route is
// refused, and the zero RouteConfig is a shared route.
func ExampleRouteConfig() {
	report, err := modules.DryRun(redis.Module("cache", modules.FromGraph(),
		redis.CacheRoute("shared", redis.RouteConfig{}),
		redis.CacheRoute("sessions", redis.RouteConfig{TenantAware: true}),
		redis.CounterRoute("quota", redis.RouteConfig{Namespace: naming.PerTenant("q")}),
		redis.LockRoute("leader", redis.RouteConfig{TenantGlobal: true}),
		redis.StreamRoute("events", redis.RouteConfig{Namespace: naming.PerTenant("e")}),
		redis.FleetRoute("replicas", redis.FleetConfig{HeartbeatInterval: 5 * time.Second, TTL: 15 * time.Second}),
	))
	for _, r := range report.Matrix.Rows {
		fmt.Printf("%-8s %-9s %-13s %s\n", r.Route, r.Reached, r.Scope, r.Verdict)
	}
	var te *tenancy.Error
	if errors.As(err, &te) {
		fmt.Println(te.Route+":", te.Fix)
	}
	// Output:
	// shared   none                    ok
	// sessions tagged                  ok
	// quota    namespace               ok
	// leader   none      tenant-global ok
	// events   none                    wiring_invalid
	// replicas none      fleet         ok
	// events: leave redis.RouteConfig.Namespace nil on this route; set RouteConfig.TenantAware (tagged) or use a routed client (dedicated)
}
