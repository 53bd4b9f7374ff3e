package mongo_test

import (
	"context"
	"sync"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Refusals happen during fx.New, before any OnStart hook: the server is
// never written to.
func TestWiringRefusals(t *testing.T) {
	cases := []struct {
		name string
		code tenancy.Code
		opts []mongo.Option
	}{
		{"raw hatch on a tagged route", tenancy.CodeStatementOriginFloor,
			[]mongo.Option{mongo.RawFilterRoute("raw", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("r")})}},
		{"raw hatch on a namespace route", tenancy.CodeStatementOriginFloor,
			[]mongo.Option{mongo.RawFilterRoute("raw", mongo.RouteConfig{Collection: naming.PerTenant("r")})}},
		{"tagged under a namespace floor", tenancy.ValidationFailed("mongodb"),
			[]mongo.Option{modules.RequiredIsolation(tenancy.Namespace),
				mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("i")})}},
		{"untagged per-tenant outbox under a namespace floor", tenancy.ValidationFailed("mongodb"),
			[]mongo.Option{modules.RequiredIsolation(tenancy.Namespace),
				mongo.OutboxRoute("events", mongo.RouteConfig{Collection: naming.PerTenant("e")})}},
		{"plain client under a dedicated floor", tenancy.ValidationFailed("mongodb"),
			[]mongo.Option{modules.RequiredIsolation(tenancy.Dedicated),
				mongo.CounterRoute("hits", mongo.RouteConfig{Collection: naming.Shared("hits"), Database: naming.PerTenant("h")})}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			started := false
			e := tenancytest.RequireRefused(t, c.code, mongo.Module("m", append(plain(t), c.opts...)...),
				fx.Invoke(func(lc fx.Lifecycle) {
					lc.Append(fx.StartHook(func() { started = true }))
				}))
			if e.Module != "m" || e.Backend != "mongodb" || e.Route == "" || e.Fix == "" {
				t.Errorf("refusal lacks its names or fix: %v", e)
			}
			if started {
				t.Error("an OnStart hook ran")
			}
		})
	}
}

// The probe is not vacuous on this backend: an untagged shared route does
// leak, and the probe's own read of A's write is what proves it.
func TestUntaggedSharedRouteIsShared(t *testing.T) {
	var c *mongo.Counter
	start(t, mongo.Module("m", append(plain(t),
		mongo.CounterRoute("hits", mongo.RouteConfig{Collection: naming.Shared("hits")}))...), named("hits", &c))
	if _, err := c.Add(ctxOf(tenancytest.TenantA), "x", 3); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Get(ctxOf(tenancytest.TenantB), "x"); err != nil || n != 3 {
		t.Fatalf("tier none is shared by design; B read %d %v", n, err)
	}
}

// Concurrent increments of one counter (the first ones racing to insert)
// lose nothing. FerretDB 1.x runs an update as a read followed by a write
// by _id, so concurrent $inc loses updates there: the concurrent part needs
// a real MongoDB (MONGODB_URI).
func TestCounterConcurrentAdds(t *testing.T) {
	workers := 8
	if !realMongo {
		t.Log("FerretDB 1.x updates are not atomic: running the adds from one goroutine (set MONGODB_URI for the concurrent run)")
		workers = 1
	}
	var c *mongo.Counter
	start(t, mongo.Module("m", append(plain(t),
		mongo.CounterRoute("hits", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("hits")}))...), named("hits", &c))
	ctx := ctxOf(tenancytest.TenantA)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range 5 {
				if _, err := c.Add(ctx, "x", 1); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n, err := c.Get(ctx, "x"); err != nil || n != int64(5*workers) {
		t.Fatalf("counter = %d %v, want %d", n, err, 5*workers)
	}
	if n, err := c.Get(context.Background(), "x"); err == nil {
		t.Fatalf("unbound get returned %d", n)
	}
}
