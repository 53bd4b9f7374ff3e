package redis_test

import (
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/redis"
)

// TestIncrOnce: a retried or redelivered operation is counted once, per
// tenant, at every tier (and on the cluster run, the counter and its
// marker share a slot, or the script fails with CROSSSLOT).
func TestIncrOnce(t *testing.T) {
	e := newEnv(t)
	for _, tc := range keyedTiers(e) {
		t.Run(tc.tier.String(), func(t *testing.T) {
			name := e.name("once" + tc.tier.String())
			c := route[*redis.Counter](t, e, name, tc.with(redis.CounterRoute(name, tc.route))...)
			for i, want := range []struct {
				value   int64
				applied bool
			}{{3, true}, {3, false}, {3, false}} {
				v, applied, err := c.AddOnce(ctxA, "hits", "evt-1", 3, time.Minute)
				if err != nil || v != want.value || applied != want.applied {
					t.Fatalf("A's call %d: value %d applied %v err %v, want %d %v", i, v, applied, err, want.value, want.applied)
				}
			}
			// B uses the same key and the same operation id: its own counter.
			if v, applied, err := c.AddOnce(ctxB, "hits", "evt-1", 1, time.Minute); err != nil || v != 1 || !applied {
				t.Fatalf("B's first call: value %d applied %v err %v, want 1 true", v, applied, err)
			}
			if v, applied, err := c.AddOnce(ctxA, "hits", "evt-2", 2, time.Minute); err != nil || v != 5 || !applied {
				t.Fatalf("A's second operation: value %d applied %v err %v, want 5 true", v, applied, err)
			}
			// An op id that looks like a hash tag or a marker stays one op.
			for _, op := range []string{"}", "{x}", "evt-1}:x"} {
				if _, applied, err := c.AddOnce(ctxA, "hits", op, 1, time.Minute); err != nil || !applied {
					t.Fatalf("op %q: applied %v err %v", op, applied, err)
				}
			}
			if n, err := c.Get(ctxA, "hits"); err != nil || n != 8 {
				t.Fatalf("A's counter %d, %v; want 8", n, err)
			}
			if _, _, err := c.AddOnce(ctxA, "hits", "evt-3", 1, 0); err == nil {
				t.Fatal("a marker that never expires was accepted")
			}
			if _, _, err := c.AddOnce(ctxA, "hits", "", 1, time.Minute); err == nil {
				t.Fatal("an empty operation id was accepted")
			}
			if _, _, err := c.AddOnce(t.Context(), "hits", "evt-9", 1, time.Minute); err == nil {
				t.Fatal("an unbound call was accepted")
			}
		})
	}
}

// TestIncrOnceMarkerExpires: after remember, the same op counts again.
func TestIncrOnceMarkerExpires(t *testing.T) {
	e := newEnv(t)
	name := e.name("onceexp")
	c := route[*redis.Counter](t, e, name, redis.CounterRoute(name, redis.RouteConfig{TenantAware: true}))
	if _, applied, err := c.AddOnce(ctxA, "k", "op", 1, 50*time.Millisecond); err != nil || !applied {
		t.Fatalf("first: %v %v", applied, err)
	}
	time.Sleep(120 * time.Millisecond)
	if v, applied, err := c.AddOnce(ctxA, "k", "op", 1, time.Minute); err != nil || !applied || v != 2 {
		t.Fatalf("after expiry: value %d applied %v err %v, want 2 true", v, applied, err)
	}
}
