package redis_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Parity: the same script run with tenancy off (tier none, nothing bound) and
// with tenancy on and only the default tenant bound gives identical
// results. Every step reads its own writes, so a run that saw nothing
// could not pass.
func TestParityTenancyOffAndDefaultTenant(t *testing.T) {
	e := newEnv(t)
	run := func(label string, ctx context.Context, rc redis.RouteConfig) []string {
		c := route[*redis.Cache](t, e, e.name("pc"+label), redis.CacheRoute(e.name("pc"+label), rc))
		n := route[*redis.Counter](t, e, e.name("pn"+label), redis.CounterRoute(e.name("pn"+label), rc))
		i := route[*redis.Idempotency](t, e, e.name("pi"+label), redis.IdempotencyRoute(e.name("pi"+label), rc))
		l := route[*redis.Locks](t, e, e.name("pl"+label), redis.LockRoute(e.name("pl"+label), rc))
		s := route[*redis.Stream](t, e, e.name("ps"+label), redis.StreamRoute(e.name("ps"+label), rc))
		var out []string
		log := func(v ...any) { out = append(out, strings.TrimSpace(fmt.Sprintln(v...))) }

		log("set", c.Set(ctx, "k", []byte("v1"), time.Minute))
		v, ok, err := c.Get(ctx, "k")
		log("get", string(v), ok, err)
		log(fmt.Sprint(c.Replace(ctx, "k", []byte("v2"))))
		log(fmt.Sprint(c.Replace(ctx, "absent", []byte("x"))))
		v, ok, err = c.Get(ctx, "k")
		log("get", string(v), ok, err)
		log(fmt.Sprint(c.Delete(ctx, "k")))
		log(fmt.Sprint(c.Delete(ctx, "k")))
		log(fmt.Sprint(n.Add(ctx, "hits", 3)))
		log(fmt.Sprint(n.Add(ctx, "hits", -1)))
		log(fmt.Sprint(n.Get(ctx, "hits")))
		res, replayed, err := i.Do(ctx, "r", returns("first"))
		log("do", string(res), replayed, err)
		res, replayed, err = i.Do(ctx, "r", returns("second"))
		log("do", string(res), replayed, err)
		lease, err := l.Acquire(ctx, "job", time.Minute)
		log("acquire", err)
		_, err = l.Acquire(ctx, "job", time.Minute)
		log("acquire again", err)
		log("renew", lease.Renew(ctx, time.Minute), "release", lease.Release(ctx), "release again", lease.Release(ctx))
		_, err = s.Append(ctx, map[string]any{"v": "x"})
		log("append", err)
		es, err := s.ReadGroup(ctx, "g", "c", 10, 0)
		log("readgroup", len(es), err)
		log(fmt.Sprint(s.Len(ctx)))
		return out
	}
	off := run("off", context.Background(), redis.RouteConfig{})
	on := run("on", tenancy.WithTenant(context.Background(), tenancy.Default), redis.RouteConfig{TenantAware: true})
	if !slices.Equal(off, on) {
		t.Fatalf("results differ:\noff %q\non  %q", off, on)
	}
	if !slices.Contains(off, `get v2 true <nil>`) {
		t.Fatalf("the script did not read its own writes: %q", off)
	}
}
