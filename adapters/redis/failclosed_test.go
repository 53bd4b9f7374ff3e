package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Fail closed: every tenant-scoped operation without a tenant (unbound, or in the
// tenant-global scope) fails with tenant_unbound and touches no key.
func TestFailClosedWithoutTenant(t *testing.T) {
	e := newEnv(t)
	for _, tc := range keyedTiers(e) {
		t.Run(tc.tier.String(), func(t *testing.T) {
			sfx := tc.tier.String()
			c := route[*redis.Cache](t, e, e.name("fc"+sfx), tc.with(redis.CacheRoute(e.name("fc"+sfx), tc.route))...)
			n := route[*redis.Counter](t, e, e.name("fn"+sfx), tc.with(redis.CounterRoute(e.name("fn"+sfx), tc.route))...)
			i := route[*redis.Idempotency](t, e, e.name("fi"+sfx), tc.with(redis.IdempotencyRoute(e.name("fi"+sfx), tc.route))...)
			l := route[*redis.Locks](t, e, e.name("fl"+sfx), tc.with(redis.LockRoute(e.name("fl"+sfx), tc.route))...)
			ops := map[string]func(context.Context) error{
				"cache get":     func(ctx context.Context) error { _, _, err := c.Get(ctx, "k"); return err },
				"cache set":     func(ctx context.Context) error { return c.Set(ctx, "k", []byte("v"), 0) },
				"cache replace": func(ctx context.Context) error { _, err := c.Replace(ctx, "k", nil); return err },
				"cache delete":  func(ctx context.Context) error { _, err := c.Delete(ctx, "k"); return err },
				"cache ttl":     func(ctx context.Context) error { _, _, err := c.TTL(ctx, "k"); return err },
				"counter incr":  func(ctx context.Context) error { _, err := n.Add(ctx, "k", 1); return err },
				"counter get":   func(ctx context.Context) error { _, err := n.Get(ctx, "k"); return err },
				"idem do": func(ctx context.Context) error {
					_, _, err := i.Do(ctx, "k", returns("v"))
					return err
				},
				"idem get":     func(ctx context.Context) error { _, _, err := i.Get(ctx, "k"); return err },
				"lock acquire": func(ctx context.Context) error { _, err := l.Acquire(ctx, "k", time.Minute); return err },
				"lock release": func(ctx context.Context) error { return l.Release(ctx, "k", "t") },
				"lock renew":   func(ctx context.Context) error { return l.Renew(ctx, "k", "t", time.Minute) },
			}
			for name, op := range ops {
				for scope, ctx := range map[string]context.Context{
					"unbound": context.Background(), "global": tenancy.WithGlobal(context.Background()),
				} {
					err := op(ctx)
					var te *tenancy.Error
					if !errors.As(err, &te) || te.Code != tenancy.CodeTenantUnbound || te.Backend != "redis" {
						t.Errorf("%s %s: %v, want tenant_unbound", name, scope, err)
					}
				}
			}
			if ks := e.keys(t); len(ks) != 0 {
				t.Fatalf("failed calls wrote keys %v", ks)
			}
		})
	}
	s := route[*redis.Stream](t, e, e.name("fs"), redis.StreamRoute(e.name("fs"), redis.RouteConfig{TenantAware: true}))
	p := route[*redis.PubSub](t, e, e.name("fp"), redis.PubSubRoute(e.name("fp"), redis.RouteConfig{TenantAware: true}))
	for name, op := range map[string]func(context.Context) error{
		"append":    func(ctx context.Context) error { _, err := s.Append(ctx, map[string]any{"a": 1}); return err },
		"readgroup": func(ctx context.Context) error { _, err := s.ReadGroup(ctx, "g", "c", 1, 0); return err },
		"trim":      func(ctx context.Context) error { _, err := s.Trim(ctx, 1); return err },
		"deliver": func(ctx context.Context) error {
			return s.Deliver(ctx, outbox.Message{EventID: "ev", Payload: []byte("x")})
		},
		"publish":   func(ctx context.Context) error { _, err := p.Publish(ctx, "ch", nil); return err },
		"subscribe": func(ctx context.Context) error { _, err := p.Subscribe(ctx, "ch"); return err },
	} {
		if err := op(context.Background()); !errors.Is(err, tenancy.CodeTenantUnbound) {
			t.Errorf("%s unbound: %v", name, err)
		}
	}
	if ks := e.keys(t); len(ks) != 0 {
		t.Fatalf("failed calls wrote keys %v", ks)
	}
}

// A namespace resolver that errs, or names an invalid namespace, fails the
// call closed: nothing falls back to a shared or default key.
func TestFailClosedOnResolver(t *testing.T) {
	e := newEnv(t)
	boom := errors.New("directory down")
	for name, fn := range map[string]func(tenancy.ID) (string, error){
		"error":   func(tenancy.ID) (string, error) { return "", boom },
		"empty":   func(tenancy.ID) (string, error) { return "", nil },
		"colon":   func(tenancy.ID) (string, error) { return "a:b", nil },
		"hashtag": func(tenancy.ID) (string, error) { return "{a}", nil },
	} {
		rn := e.name("res" + name)
		c := route[*redis.Cache](t, e, rn, redis.CacheRoute(rn, redis.RouteConfig{Namespace: naming.Func(fn)}))
		if err := c.Set(ctxA, "k", []byte("v"), 0); err == nil {
			t.Errorf("%s resolver: set succeeded", name)
		}
		if name == "error" {
			if err := c.Set(ctxA, "k", nil, 0); !errors.Is(err, boom) {
				t.Errorf("resolver error not wrapped: %v", err)
			}
		}
	}
	if ks := e.keys(t); len(ks) != 0 {
		t.Fatalf("failed calls wrote keys %v", ks)
	}
}
