package redis_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/redis"
)

func TestLockExpiryAndRenew(t *testing.T) {
	e := newEnv(t)
	name := e.name("expiry")
	l := route[*redis.Locks](t, e, name, redis.LockRoute(name, redis.RouteConfig{TenantAware: true}))
	if _, err := l.Acquire(ctxA, "job", 500*time.Microsecond); err == nil {
		t.Fatal("a sub-millisecond TTL was accepted")
	}
	lease, err := l.Acquire(ctxA, "job", 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
	if err := lease.Renew(ctxA, 300*time.Millisecond); err != nil {
		t.Fatalf("renew before expiry: %v", err)
	}
	time.Sleep(150 * time.Millisecond) // past the first TTL, inside the renewed one
	if held, err := l.Held(ctxA, "job"); err != nil || !held {
		t.Fatalf("renewed lock gone: %v %v", held, err)
	}
	time.Sleep(250 * time.Millisecond)
	if err := lease.Renew(ctxA, time.Second); !errors.Is(err, redis.ErrNotOwner) {
		t.Fatalf("renew after expiry: %v", err)
	}
	next, err := l.Acquire(ctxA, "job", time.Second)
	if err != nil {
		t.Fatalf("acquire after expiry: %v", err)
	}
	// The expired owner cannot release the new owner's lock.
	if err := lease.Release(ctxA); !errors.Is(err, redis.ErrNotOwner) {
		t.Fatalf("stale release: %v", err)
	}
	if err := next.Release(ctxA); err != nil {
		t.Fatal(err)
	}
}
