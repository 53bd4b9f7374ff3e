package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/tenancytest"
)

var errNotFound = errors.New("not found")

func found(ok bool, err error) error {
	if err != nil {
		return err
	}
	if !ok {
		return errNotFound
	}
	return nil
}

func TestBoundaryCache(t *testing.T) {
	e := newEnv(t)
	for _, tc := range keyedTiers(e) {
		t.Run(tc.tier.String(), func(t *testing.T) {
			name := e.name("cache" + tc.tier.String())
			c := route[*redis.Cache](t, e, name, tc.with(redis.CacheRoute(name, tc.route))...)
			tenancytest.Boundary(t, cacheProbe(c))
			// B writing the same key writes its own.
			if err := c.Set(ctxB, "k{1}", []byte("b"), 0); err != nil {
				t.Fatal(err)
			}
			if v, _, _ := c.Get(ctxA, "k{1}"); string(v) != "a" {
				t.Fatalf("A's value became %q after B's set", v)
			}
		})
	}
}

func TestBoundaryCounter(t *testing.T) {
	e := newEnv(t)
	for _, tc := range keyedTiers(e) {
		t.Run(tc.tier.String(), func(t *testing.T) {
			name := e.name("ctr" + tc.tier.String())
			c := route[*redis.Counter](t, e, name, tc.with(redis.CounterRoute(name, tc.route))...)
			tenancytest.Boundary(t, counterProbe(c))
			if n, err := c.Add(ctxB, "hits", 1); err != nil || n != 1 {
				t.Fatalf("B's own counter: %d, %v", n, err)
			}
			if n, _ := c.Get(ctxA, "hits"); n != 5 {
				t.Fatalf("A's counter is %d after B's increment", n)
			}
		})
	}
}

func TestBoundaryIdempotency(t *testing.T) {
	e := newEnv(t)
	for _, tc := range keyedTiers(e) {
		t.Run(tc.tier.String(), func(t *testing.T) {
			name := e.name("idem" + tc.tier.String())
			i := route[*redis.Idempotency](t, e, name, tc.with(redis.IdempotencyRoute(name, tc.route))...)
			tenancytest.Boundary(t, idempotencyProbe(i))
			// A's second call replays its first; B's first call runs in B's space.
			res, replayed, err := i.Do(ctxA, "req-1", returns("again"))
			if err != nil || !replayed || string(res) != "a" {
				t.Fatalf("A's repeat: replayed=%v result=%q err=%v", replayed, res, err)
			}
			res, replayed, err = i.Do(ctxB, "req-1", returns("b"))
			if err != nil || replayed || string(res) != "b" {
				t.Fatalf("B's first call: replayed=%v result=%q err=%v", replayed, res, err)
			}
		})
	}
}

func TestBoundaryLock(t *testing.T) {
	e := newEnv(t)
	for _, tc := range keyedTiers(e) {
		t.Run(tc.tier.String(), func(t *testing.T) {
			name := e.name("lock" + tc.tier.String())
			l := route[*redis.Locks](t, e, name, tc.with(redis.LockRoute(name, tc.route))...)
			var lease *redis.Lease
			tenancytest.Boundary(t, lockProbe(l, &lease))
			if err := lease.Release(ctxB); !errors.Is(err, redis.ErrNotOwner) {
				t.Fatalf("A's lease released under B: %v", err)
			}
			// B takes its own lock of the same name; A's stays A's.
			bl, err := l.Acquire(ctxB, "job", time.Minute)
			if err != nil {
				t.Fatalf("B's own lock: %v", err)
			}
			if _, err := l.Acquire(ctxA, "job", time.Minute); !errors.Is(err, redis.ErrLockHeld) {
				t.Fatalf("A re-acquired its held lock after B took its own: %v", err)
			}
			if err := lease.Release(ctxA); err != nil {
				t.Fatalf("A release: %v", err)
			}
			if err := bl.Release(ctxA); !errors.Is(err, redis.ErrNotOwner) {
				t.Fatalf("B's lease released under A: %v", err)
			}
			if err := bl.Release(ctxB); err != nil {
				t.Fatalf("B release: %v", err)
			}
		})
	}
}

func TestBoundaryStream(t *testing.T) {
	e := newEnv(t)
	for _, tc := range channelTiers(e) {
		t.Run(tc.tier.String(), func(t *testing.T) {
			name := e.name("stream" + tc.tier.String())
			s := route[*redis.Stream](t, e, name, tc.with(redis.StreamRoute(name, tc.route))...)
			var id string
			tenancytest.Boundary(t, streamProbe(s, &id))
			// B's consumer group reads nothing of A's stream; A's reads A's entry.
			if es, err := s.ReadGroup(ctxB, "g", "c1", 100, 0); err != nil || len(es) != 0 {
				t.Fatalf("B's group read %v, %v", es, err)
			}
			es, err := s.ReadGroup(ctxA, "g", "c1", 100, 0)
			if err != nil || len(es) != 1 || es[0].ID != id {
				t.Fatalf("A's group read %v, %v (want %s)", es, err, id)
			}
			if err := s.Ack(ctxA, "g", id); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBoundaryPubSub(t *testing.T) {
	e := newEnv(t)
	for _, tc := range channelTiers(e) {
		t.Run(tc.tier.String(), func(t *testing.T) {
			name := e.name("ps" + tc.tier.String())
			p := route[*redis.PubSub](t, e, name, tc.with(redis.PubSubRoute(name, tc.route))...)
			subA, err := p.Subscribe(ctxA, "news")
			if err != nil {
				t.Fatal(err)
			}
			defer subA.Close()
			subB, err := p.Subscribe(ctxB, "news")
			if err != nil {
				t.Fatal(err)
			}
			defer subB.Close()
			if _, err := p.Publish(ctxA, "news", []byte("for A")); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			m, err := subA.Receive(rctx)
			if err != nil || m.Channel != "news" || string(m.Payload) != "for A" {
				t.Fatalf("A's own message: %+v, %v", m, err)
			}
			bctx, cancelB := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancelB()
			if m, err := subB.Receive(bctx); err == nil {
				t.Fatalf("B received A's message: %+v", m)
			}
		})
	}
}

func TestSharedTierIsShared(t *testing.T) {
	e := newEnv(t)
	name := e.name("shared")
	c := route[*redis.Cache](t, e, name, redis.CacheRoute(name, redis.RouteConfig{}))
	if err := c.Set(context.Background(), "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Get(ctxB, "k"); err != nil || !ok {
		t.Fatalf("a tier-none route is one shared space: %v %v", ok, err)
	}
	if ks := e.keysOf(t, name); len(ks) != 1 || ks[0] != fmt.Sprintf("tw:s:c:%s:k", name) {
		t.Fatalf("keys %v", ks)
	}
}

// cacheProbe sets one key.
func cacheProbe(c *redis.Cache) tenancytest.Probe {
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { return c.Set(ctx, "k{1}", []byte("a"), time.Minute) },
		Read: func(ctx context.Context) (bool, error) {
			_, ok, err := c.Get(ctx, "k{1}")
			return ok, err
		},
		Intact: func(ctx context.Context) (bool, error) {
			v, _, err := c.Get(ctx, "k{1}")
			return string(v) == "a", err
		},
		Count: func(ctx context.Context) (int, error) {
			_, ok, err := c.TTL(ctx, "k{1}")
			return map[bool]int{true: 1}[ok], err
		},
		Update: func(ctx context.Context) error { return found(c.Replace(ctx, "k{1}", []byte("b"))) },
		Delete: func(ctx context.Context) error { return found(c.Delete(ctx, "k{1}")) },
	}
}

// counterProbe adds 5 to one counter.
func counterProbe(c *redis.Counter) tenancytest.Probe {
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { _, err := c.Add(ctx, "hits", 5); return err },
		Read: func(ctx context.Context) (bool, error) {
			n, err := c.Get(ctx, "hits")
			return n != 0, err
		},
		Intact: func(ctx context.Context) (bool, error) {
			n, err := c.Get(ctx, "hits")
			return n == 5, err
		},
		Delete: func(ctx context.Context) error { return found(c.Delete(ctx, "hits")) },
	}
}

// idempotencyProbe stores one result.
func idempotencyProbe(i *redis.Idempotency) tenancytest.Probe {
	return tenancytest.Probe{
		Write: func(ctx context.Context) error {
			_, replayed, err := i.Do(ctx, "req-1", returns("a"))
			return found(!replayed, err)
		},
		Read: func(ctx context.Context) (bool, error) {
			_, ok, err := i.Get(ctx, "req-1")
			return ok, err
		},
		Intact: func(ctx context.Context) (bool, error) {
			v, _, err := i.Get(ctx, "req-1")
			return string(v) == "a", err
		},
		Delete: func(ctx context.Context) error { return found(i.Delete(ctx, "req-1")) },
	}
}

// lockProbe acquires one lock and keeps its lease in lease.
func lockProbe(l *redis.Locks, lease **redis.Lease) tenancytest.Probe {
	return tenancytest.Probe{
		Write: func(ctx context.Context) error {
			got, err := l.Acquire(ctx, "job", time.Minute)
			if err == nil {
				*lease = got
			}
			return err
		},
		Read: func(ctx context.Context) (bool, error) { return l.Held(ctx, "job") },
		// B holding A's token still cannot renew or release A's lock.
		Update: func(ctx context.Context) error { return l.Renew(ctx, "job", (*lease).Token(), time.Hour) },
		Delete: func(ctx context.Context) error { return l.Release(ctx, "job", (*lease).Token()) },
		Intact: func(ctx context.Context) (bool, error) {
			err := (*lease).Renew(ctx, time.Minute)
			return err == nil, err
		},
	}
}

// streamProbe appends one entry and keeps its id in id.
func streamProbe(s *redis.Stream, id *string) tenancytest.Probe {
	return tenancytest.Probe{
		Write: func(ctx context.Context) error {
			got, err := s.Append(ctx, map[string]any{"v": "a"})
			if err == nil {
				*id = got
			}
			return err
		},
		Read: func(ctx context.Context) (bool, error) {
			n, err := s.Len(ctx)
			return n > 0, err
		},
		RecordID: "a",
		List: func(ctx context.Context) ([]string, error) {
			es, err := s.Range(ctx, "-", "+", 100)
			vals := make([]string, len(es))
			for i, en := range es {
				vals[i], _ = en.Values["v"].(string)
			}
			return vals, err
		},
		Delete: func(ctx context.Context) error {
			n, err := s.Trim(ctx, 0)
			if err == nil && n == 0 {
				return errNotFound
			}
			return err
		},
		Intact: func(ctx context.Context) (bool, error) {
			n, err := s.Len(ctx)
			return n == 1, err
		},
	}
}
