package redis_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestConformance probes every (kind, tier) cell of redis.Rules() on the
// real server: each cell is one route under a module whose floor is the
// cell's tier, wired as keyedTiers and channelTiers wire it.
func TestConformance(t *testing.T) {
	e := newEnv(t)
	tenancytest.Conformance(t, redis.Rules(), func(t *testing.T, kind floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		var tc scoped
		for _, s := range keyedTiers(e) {
			if s.tier == tier {
				tc = s
			}
		}
		tc.mod = append(tc.mod, modules.RequiredIsolation(tier))
		name := e.name("kit-" + string(kind) + "-" + tier.String())
		switch kind {
		case "cache":
			r := erasableRoute[*redis.Cache](t, e, name, tc.with(redis.CacheRoute(name, tc.route))...)
			return erasable(cacheProbe(r), r), nil
		case "counter":
			r := erasableRoute[*redis.Counter](t, e, name, tc.with(redis.CounterRoute(name, tc.route))...)
			return erasable(counterProbe(r), r), nil
		case "idempotency":
			r := erasableRoute[*redis.Idempotency](t, e, name, tc.with(redis.IdempotencyRoute(name, tc.route))...)
			return erasable(idempotencyProbe(r), r), nil
		case "lock":
			var lease *redis.Lease
			r := erasableRoute[*redis.Locks](t, e, name, tc.with(redis.LockRoute(name, tc.route))...)
			return erasable(lockProbe(r, &lease), r), nil
		case "stream":
			var id string
			r := erasableRoute[*redis.Stream](t, e, name, tc.with(redis.StreamRoute(name, tc.route))...)
			return erasable(streamProbe(r, &id), r), nil
		case "pubsub":
			// A message is no stored record: no offboarding check.
			r := route[*redis.PubSub](t, e, name, tc.with(redis.PubSubRoute(name, tc.route))...)
			p, err := pubsubProbe(t, r)
			return suspended(p, r), err
		}
		return tenancytest.Probe{}, tenancytest.ErrNotCovered
	})
}

// pubsubProbe subscribes A and B to one channel before A publishes on it.
// Read under a tenant reports whether that tenant's subscription received
// the message: A waits up to two seconds for it, B, by then, a few hundred
// milliseconds (a leak would arrive with A's delivery). Read with no
// tenant tries to subscribe, which must fail closed.
func pubsubProbe(t *testing.T, p *redis.PubSub) (tenancytest.Probe, error) {
	subs := map[tenancy.ID]*redis.Subscription{}
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
		sub, err := p.Subscribe(tenancy.WithTenant(context.Background(), id), "news")
		if err != nil {
			return tenancytest.Probe{}, err
		}
		t.Cleanup(func() { sub.Close() })
		subs[id] = sub
	}
	got := map[tenancy.ID]bool{}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { _, err := p.Publish(ctx, "news", []byte("probe")); return err },
		Read: func(ctx context.Context) (bool, error) {
			id, bound := tenancy.FromContext(ctx)
			if !bound {
				sub, err := p.Subscribe(ctx, "news")
				if err == nil {
					sub.Close()
				}
				return false, err
			}
			if got[id] {
				// Still a call of the route, so that a suspended tenant's
				// read is refused as any other.
				sub, err := p.Subscribe(ctx, "news-check")
				if err != nil {
					return false, err
				}
				sub.Close()
				return true, nil
			}
			wait := 300 * time.Millisecond
			if id == tenancytest.TenantA {
				wait = 2 * time.Second
			}
			rctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			m, err := subs[id].Receive(rctx)
			// The wait ended with nothing received: the socket's read
			// deadline (set from rctx) can fire just before rctx's own.
			var ne net.Error
			if rctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			got[id] = string(m.Payload) == "probe"
			return got[id], nil
		},
	}, nil
}

// tenantsOf is the lifecycle of the app erasableRoute built each route
// in, for the cells' offboarding check.
var tenantsOf sync.Map

// erasableRoute is route in an app with modules.Lifecycle() and the
// module built with AllowTeardown, so the cell checks offboarding too.
func erasableRoute[T any](t testing.TB, e *env, name string, opts ...redis.Option) T {
	t.Helper()
	var r struct {
		fx.In
		Tenants     *modules.Tenants
		Suspensions *modules.Suspensions
	}
	var got T
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		redis.Module("m-"+e.suffix, e.source(append(opts, modules.AllowTeardown()))...),
		fx.Invoke(fx.Annotate(func(v T) { got = v }, fx.ParamTags(`name:"`+name+`"`))), fx.Populate(&r))
	if err := app.Err(); err != nil {
		t.Fatalf("fx.New: %v", err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	suspensionsOf.Store(any(got), r.Suspensions)
	tenantsOf.Store(any(got), r.Tenants)
	return got
}

// erasable is suspended, with the route's lifecycle for the offboarding
// check.
func erasable(p tenancytest.Probe, obj any) tenancytest.Probe {
	p = suspended(p, obj)
	if tn, ok := tenantsOf.Load(obj); ok {
		p.Tenants = tn.(*modules.Tenants)
	}
	return p
}
