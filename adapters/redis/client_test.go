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
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A module built with Connect owns its client: it works once started and
// is closed on stop (TestMain's goleak check fails otherwise). A client
// from the graph works the same and stays the caller's.
func TestClientSources(t *testing.T) {
	e := newEnv(t)
	name := e.name("connect")
	for _, src := range []struct {
		label string
		opts  []fx.Option
	}{
		{"connect", []fx.Option{redis.Module("m", redis.Connect(&goredis.UniversalOptions{Addrs: e.addrs}),
			redis.CacheRoute(name, redis.RouteConfig{}))}},
		{"graph", []fx.Option{redis.Module("m", modules.FromGraph(), redis.CacheRoute(name, redis.RouteConfig{})),
			fx.Supply(fx.Annotate(e.client, fx.As(new(goredis.UniversalClient))))}},
	} {
		t.Run(src.label, func(t *testing.T) {
			var c *redis.Cache
			app := fx.New(append(src.opts, fx.NopLogger,
				fx.Invoke(fx.Annotate(func(v *redis.Cache) { c = v }, fx.ParamTags(`name:"`+name+`"`))))...)
			if err := app.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := c.Set(context.Background(), "k", []byte(src.label), time.Minute); err != nil {
				t.Fatal(err)
			}
			if v, _, err := c.Get(context.Background(), "k"); err != nil || string(v) != src.label {
				t.Fatalf("get %q %v", v, err)
			}
			if err := app.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := e.client.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("the graph's client was closed by the module: %v", err)
	}
}

// A module with no connection source, or two, is refused at fx.New and by
// the dry run alike, with the options to choose from; FromGraph with
// nothing in the graph is refused when its routes are built.
func TestNoClientIsAClearError(t *testing.T) {
	for _, mod := range []fx.Option{
		redis.Module("m", redis.CacheRoute("c", redis.RouteConfig{})),
		redis.Module("m", modules.FromGraph(), redis.Connect(&goredis.UniversalOptions{}), redis.CacheRoute("c", redis.RouteConfig{})),
	} {
		e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, mod)
		if !strings.Contains(e.Fix, "modules.FromGraph()") {
			t.Errorf("fix %q", e.Fix)
		}
		if _, err := modules.DryRun(mod); tenancy.CodeOf(err) != tenancy.CodeWiringInvalid {
			t.Errorf("dry run: %v", err)
		}
	}
	app := fx.New(fx.NopLogger, redis.Module("m", modules.FromGraph(), redis.CacheRoute("c", redis.RouteConfig{})),
		fx.Invoke(fx.Annotate(func(*redis.Cache) {}, fx.ParamTags(`name:"c"`))))
	if tenancy.CodeOf(app.Err()) != tenancy.CodeWiringInvalid {
		t.Fatalf("FromGraph with nothing provided: %v", app.Err())
	}
}
