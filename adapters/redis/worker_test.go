package redis_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type seen struct {
	mu  sync.Mutex
	got map[tenancy.ID][]string
}

func (s *seen) handle(ctx context.Context, e redis.Entry) error {
	id, err := tenancy.Require(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, _ := e.Values["v"].(string)
	s.got[id] = append(s.got[id], v)
	return nil
}

func (s *seen) snapshot() map[tenancy.ID][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[tenancy.ID][]string{}
	for k, v := range s.got {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// A sharded consumer assigned only tenant B binds B for each entry and
// reads nothing of A's stream; it stops cleanly.
func TestShardedConsumerBindsAssignedTenant(t *testing.T) {
	e := newEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, tc := range channelTiers(e) {
		t.Run(tc.tier.String(), func(t *testing.T) {
			name := e.name("jobs" + tc.tier.String())
			h := &seen{got: map[tenancy.ID][]string{}}
			var s *redis.Stream
			app := fx.New(fx.NopLogger,
				redis.Module("w", e.source(append(tc.with(redis.StreamRoute(name, tc.route)),
					redis.StreamConsumer(name, redis.ConsumerConfig{
						Group: "workers", Handle: h.handle, Block: 50 * time.Millisecond,
						WorkerConfig: shards.WorkerConfig{Tenants: func(context.Context) ([]tenancy.ID, error) {
							return []tenancy.ID{tenancytest.TenantB}, nil
						}},
					})))...),
				fx.Invoke(fx.Annotate(func(v *redis.Stream) { s = v }, fx.ParamTags(`name:"`+name+`"`))),
			)
			if err := app.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, w := range []struct {
				ctx context.Context
				v   string
			}{{ctxA, "a1"}, {ctxB, "b1"}, {ctxA, "a2"}, {ctxB, "b2"}} {
				if _, err := s.Append(w.ctx, map[string]any{"v": w.v}); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.Now().Add(3 * time.Second)
			for len(h.snapshot()[tenancytest.TenantB]) < 2 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond) // room for a wrong delivery to show up
			// A's entries are still there, unread by anyone's group.
			if n, err := s.Len(ctxA); n != 2 {
				t.Fatalf("A's stream has %d entries (%v)", n, err)
			}
			if err := app.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := h.snapshot()
			if len(got) != 1 || len(got[tenancytest.TenantB]) != 2 || got[tenancytest.TenantB][0] != "b1" {
				t.Fatalf("handled %v, want only B's b1, b2", got)
			}
		})
	}
}

// An unbound consumer over a shared stream reads it all; a failing entry
// stays pending and is redelivered after ClaimAfter.
func TestUnboundConsumerOverSharedStreamWithRedelivery(t *testing.T) {
	e := newEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	name := e.name("shared-jobs")
	var mu sync.Mutex
	attempts := map[string]int{}
	done := make(chan struct{})
	handle := func(ctx context.Context, en redis.Entry) error {
		mu.Lock()
		defer mu.Unlock()
		v, _ := en.Values["v"].(string)
		attempts[v]++
		if v == "flaky" && attempts[v] == 1 {
			return context.DeadlineExceeded
		}
		if v == "flaky" {
			close(done)
		}
		return nil
	}
	var s *redis.Stream
	app := fx.New(fx.NopLogger,
		redis.Module("w", redis.Use(e.client),
			redis.StreamRoute(name, redis.RouteConfig{}),
			redis.StreamConsumer(name, redis.ConsumerConfig{
				Group: "g", Handle: handle, Block: 30 * time.Millisecond,
				ClaimAfter: 50 * time.Millisecond, WorkerConfig: shards.WorkerConfig{OnError: func(error) {}},
			})),
		fx.Invoke(fx.Annotate(func(v *redis.Stream) { s = v }, fx.ParamTags(`name:"`+name+`"`))),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(context.Background(), map[string]any{"v": "flaky"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Error("the failed entry was never redelivered")
	}
	if err := app.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The sharded trim sweep trims the assigned tenant's stream only.
func TestShardedTrimSweep(t *testing.T) {
	e := newEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	name := e.name("trimmed")
	var s *redis.Stream
	app := fx.New(fx.NopLogger,
		redis.Module("w", redis.Use(e.client),
			redis.StreamRoute(name, redis.RouteConfig{TenantAware: true}),
			redis.StreamTrim(name, redis.TrimConfig{
				MaxLen: 10, Every: 20 * time.Millisecond,
				WorkerConfig: shards.WorkerConfig{Tenants: func(context.Context) ([]tenancy.ID, error) {
					return []tenancy.ID{tenancytest.TenantA}, nil
				}},
			})),
		fx.Invoke(fx.Annotate(func(v *redis.Stream) { s = v }, fx.ParamTags(`name:"`+name+`"`))),
	)
	for _, ctx := range []context.Context{ctxA, ctxB} {
		for i := range 500 {
			if _, err := s.Append(ctx, map[string]any{"i": i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		n, _ := s.Len(ctxA)
		if n < 500 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's stream never trimmed: %d", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := app.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Len(ctxB); n != 500 {
		t.Fatalf("B's stream (not assigned) has %d entries", n)
	}
}

// Destination appends each message to the stream of the tenant the relay
// bound (outbox.Bind), refuses a message bound to another tenant, and
// fails closed on a tenant-aware stream for a deployment-wide message.
func TestDestinationRoutesPerTenant(t *testing.T) {
	e := newEnv(t)
	name := e.name("outbox")
	s := route[*redis.Stream](t, e, name, redis.StreamRoute(name, redis.RouteConfig{TenantAware: true}))
	var d outbox.Destination = s
	m := outbox.Message{Tenant: tenancytest.TenantA, EventID: "ev-1", Topic: "orders", Key: []byte("o1"),
		Payload: []byte(`{"a":1}`), Headers: map[string]string{"trace": "t1"}}
	if err := d.Deliver(outbox.Bind(context.Background(), m), m); err != nil {
		t.Fatal(err)
	}
	es, err := s.Range(ctxA, "-", "+", 10)
	if err != nil || len(es) != 1 {
		t.Fatalf("A's stream: %+v %v", es, err)
	}
	want := map[string]any{"event_id": "ev-1", "topic": "orders", "key": "o1", "payload": `{"a":1}`, "header:trace": "t1"}
	if !maps.Equal(es[0].Values, want) {
		t.Fatalf("entry %v, want %v", es[0].Values, want)
	}
	if n, _ := s.Len(ctxB); n != 0 {
		t.Fatalf("B's stream got %d entries", n)
	}
	if err := d.Deliver(ctxB, m); err == nil {
		t.Fatal("A's message delivered under B's binding")
	}
	global := outbox.Message{EventID: "ev-2", Payload: []byte("x")}
	if err := d.Deliver(outbox.Bind(context.Background(), global), global); !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Fatalf("deployment-wide message on a tenant-aware stream: %v", err)
	}
	if err := s.Deliver(ctxB, outbox.Message{EventID: "ev-3", Payload: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Len(ctxB); n != 1 {
		t.Fatalf("B's stream has %d entries after a bare message under B", n)
	}
}

// A sharded worker whose tenant provider fails does not start unbound: the
// app's start fails, naming the worker.
func TestShardedWorkerProviderErrorFailsStart(t *testing.T) {
	e := newEnv(t)
	name := e.name("noshards")
	app := fx.New(fx.NopLogger, redis.Module("w", redis.Use(e.client),
		redis.StreamRoute(name, redis.RouteConfig{TenantAware: true}),
		redis.StreamConsumer(name, redis.ConsumerConfig{Group: "g", Handle: noop,
			WorkerConfig: shards.WorkerConfig{Tenants: func(context.Context) ([]tenancy.ID, error) { return nil, errors.New("directory down") }}})))
	err := app.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), name+"-consumer") || !strings.Contains(err.Error(), "directory down") {
		t.Fatalf("start: %v", err)
	}
}
