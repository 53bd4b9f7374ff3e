package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Each tenant's keys land on its own client (here its own database), and
// still carry the tenant, so a shared server plus ACLs stays separated too.
func TestRoutedKeysLandOnTheTenantsClient(t *testing.T) {
	e := newEnv(t)
	name := e.name("routed")
	c := route[*redis.Cache](t, e, name, e.routed(), redis.CacheRoute(name, redis.RouteConfig{}))
	if err := c.Set(ctxA, "k", []byte("a"), time.Minute); err != nil {
		t.Fatal(err)
	}
	want := "tw:d:" + tenancytest.TenantA.Hex() + ":c:" + name + ":k"
	want = fmt.Sprintf("db%d/%s", e.routedDB(tenancytest.TenantA), want)
	if got := e.keys(t); !slices.Equal(got, []string{want}) {
		t.Fatalf("keys %v, want only %s", got, want)
	}
}

// Fail closed: a credential resolver error fails the call; nothing falls back to a
// shared client or writes anywhere.
func TestRoutedResolverErrorFailsClosed(t *testing.T) {
	e := newEnv(t)
	name := e.name("nocreds")
	c := route[*redis.Cache](t, e, name, e.routed(), redis.CacheRoute(name, redis.RouteConfig{}))
	ctx := tenancy.WithTenant(context.Background(), tenantNoCreds)
	if err := c.Set(ctx, "k", []byte("v"), 0); !errors.Is(err, errNoCreds) {
		t.Fatalf("set with no credentials: %v", err)
	}
	if _, _, err := c.Get(ctx, "k"); !errors.Is(err, errNoCreds) {
		t.Fatalf("get with no credentials: %v", err)
	}
	if ks := e.keys(t); len(ks) != 0 {
		t.Fatalf("keys written: %v", ks)
	}
}

func TestRoutedWiring(t *testing.T) {
	resolve := func(context.Context, tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: "127.0.0.1:1"}, nil
	}
	routed := redis.Routed(resolve, redis.RoutedConfig{Limits: routing.Limits{MaxClients: 8, MaxConnsPerClient: 4}})
	tenancytest.RequireWires(t, redis.Module("m", routed, modules.RequiredIsolation(tenancy.Dedicated),
		redis.CacheRoute("c", redis.RouteConfig{}), redis.StreamRoute("s", redis.RouteConfig{}), redis.PubSubRoute("p", redis.RouteConfig{})))
	tenancytest.RequireRefused(t, tenancy.CodeFleetTenantScoped,
		redis.Module("m", routed, redis.FleetRoute("replicas", redis.FleetConfig{})))
	tenancytest.RequireRefused(t, tenancy.CodeGlobalTenantScoped,
		redis.Module("m", routed, redis.LockRoute("leader", redis.RouteConfig{TenantGlobal: true})))
	e := tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, redis.Module("m", routed,
		redis.StreamRoute("s", redis.RouteConfig{}), redis.StreamConsumer("s", redis.ConsumerConfig{Group: "g", Handle: noop})))
	if !strings.Contains(e.Detail, "routed client") {
		t.Errorf("detail %q", e.Detail)
	}
	tenancytest.RequireRefused(t, tenancy.CodeConnectionBudgetExceeded,
		redis.Module("m", routed, modules.ConnBudget(16), redis.CacheRoute("c", redis.RouteConfig{})))
	tenancytest.RequireWires(t, redis.Module("m", routed, modules.ConnBudget(32), redis.CacheRoute("c", redis.RouteConfig{})))
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		redis.Module("m", redis.Routed(nil, redis.RoutedConfig{}), redis.CacheRoute("c", redis.RouteConfig{})))
}

// Stopping a routed app closes every tenant's client: no goroutine stays.
func TestRoutedStopClosesClients(t *testing.T) {
	e := newEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	name := e.name("stop")
	var c *redis.Cache
	app := fx.New(fx.NopLogger, redis.Module("m", e.routed(), redis.CacheRoute(name, redis.RouteConfig{})),
		fx.Invoke(fx.Annotate(func(v *redis.Cache) { c = v }, fx.ParamTags(`name:"`+name+`"`))))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ctx := range []context.Context{ctxA, ctxB} {
		if err := c.Set(ctx, "k", []byte("v"), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}
