package redis_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/tenancy"
)

func TestFleetLiveList(t *testing.T) {
	e := newEnv(t)
	name := e.name("fleet")
	f := route[*redis.Fleet](t, e, name, redis.FleetRoute(name, redis.FleetConfig{}))
	g := tenancy.WithGlobal(context.Background())
	if err := f.Heartbeat(g, "r1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := f.Heartbeat(g, "r2", 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	live, err := f.Live(g)
	if err != nil || !slices.Equal(live, []string{"r1", "r2"}) {
		t.Fatalf("live %v, %v", live, err)
	}
	time.Sleep(250 * time.Millisecond)
	if live, _ = f.Live(g); !slices.Equal(live, []string{"r1"}) {
		t.Fatalf("after r2's TTL: live %v", live)
	}
	// Fleet state is one deployment-wide set, whatever the context binds.
	if live, _ = f.Live(ctxB); !slices.Equal(live, []string{"r1"}) {
		t.Fatalf("fleet seen from a tenant context: %v", live)
	}
	if err := f.Leave(g, "r1"); err != nil {
		t.Fatal(err)
	}
	if live, _ = f.Live(g); len(live) != 0 {
		t.Fatalf("after leave: %v", live)
	}
}

func TestFleetHeartbeatFollowsLifecycle(t *testing.T) {
	e := newEnv(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	name := e.name("beat")
	var f *redis.Fleet
	app := fx.New(fx.NopLogger,
		redis.Module("fleet", redis.Use(e.client),
			redis.FleetRoute(name, redis.FleetConfig{HeartbeatInterval: 20 * time.Millisecond, TTL: time.Second, Replica: "me"})),
		fx.Invoke(fx.Annotate(func(v *redis.Fleet) { f = v }, fx.ParamTags(`name:"`+name+`"`))),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	g := tenancy.WithGlobal(context.Background())
	deadline := time.Now().Add(2 * time.Second)
	for {
		live, err := f.Live(g)
		if err == nil && slices.Equal(live, []string{"me"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica never went live: %v %v", live, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := app.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if live, err := f.Live(g); err != nil || len(live) != 0 {
		t.Fatalf("after stop: %v %v", live, err)
	}
}

func TestTenantGlobalLockAndWake(t *testing.T) {
	e := newEnv(t)
	ln, pn := e.name("leader"), e.name("wake")
	l := route[*redis.Locks](t, e, ln, redis.LockRoute(ln, redis.RouteConfig{TenantGlobal: true}))
	p := route[*redis.PubSub](t, e, pn, redis.PubSubRoute(pn, redis.RouteConfig{TenantGlobal: true}))
	g := tenancy.WithGlobal(context.Background())
	lease, err := l.Acquire(g, "relay", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(g, "relay", time.Minute); err != redis.ErrLockHeld {
		t.Fatalf("second leader: %v", err)
	}
	if err := lease.Release(g); err != nil {
		t.Fatal(err)
	}
	sub, err := p.Subscribe(g, "outbox")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// A cluster counts only the subscribers on the node that took the
	// PUBLISH; the Receive below is what proves delivery there.
	if n, err := p.Publish(g, "outbox", []byte("go")); err != nil || (n != 1 && !e.cluster) {
		t.Fatalf("publish: %d %v", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if m, err := sub.Receive(ctx); err != nil || string(m.Payload) != "go" {
		t.Fatalf("wake: %+v %v", m, err)
	}
	if ks := e.keysOf(t, ln); len(ks) != 0 {
		t.Fatalf("released lock left %v", ks)
	}
}
