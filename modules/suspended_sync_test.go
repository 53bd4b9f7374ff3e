package modules_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// registry stands in for the app's own store of suspended tenants.
type registry struct {
	mu   sync.Mutex
	ids  map[tenancy.ID]bool
	fail error
}

func (r *registry) set(id tenancy.ID, suspended bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids[id] = suspended
}

func (r *registry) read(context.Context) ([]tenancy.ID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return nil, r.fail
	}
	var out []tenancy.ID
	for id, s := range r.ids {
		if s {
			out = append(out, id)
		}
	}
	return out, nil
}

type syncedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// replica builds an app that follows reg; reads counts its reads of it.
func replica(t *testing.T, reg *registry, log *syncedLog) (*fx.App, *modules.Tenants, *atomic.Int64) {
	t.Helper()
	var tn *modules.Tenants
	reads := &atomic.Int64{}
	read := func(ctx context.Context) ([]tenancy.ID, error) {
		defer reads.Add(1)
		return reg.read(ctx)
	}
	app := fx.New(fx.NopLogger,
		modules.LifecycleWith(modules.LifecycleConfig{Suspended: read, Refresh: 20 * time.Millisecond}),
		fx.Supply(slog.New(slog.NewTextHandler(log, nil))), fx.Populate(&tn))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return app, tn, reads
}

// within waits up to 2 s for cond.
func within(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 2 s: %s", what)
		}
	}
}

// TestSuspensionsFollowTheStoreAcrossReplicas: two replicas share one
// store. A suspension recorded in it and made on one replica holds there
// at once and reaches the other within its refresh, and so does its
// lifting; a local suspension the store does not list (an offboarding)
// holds on its replica across refreshes and only there; a failed read
// keeps the last set and is logged; a replica whose first read fails
// does not start; stopping leaves no goroutine.
func TestSuspensionsFollowTheStoreAcrossReplicas(t *testing.T) {
	// Goroutines already running are other tests' (a driver's client an
	// earlier test left behind, seen from the second -count on): only this
	// test's replicas must leave none.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := &registry{ids: map[tenancy.ID]bool{}}
	var log syncedLog
	app1, r1, _ := replica(t, reg, &log)
	app2, r2, reads2 := replica(t, reg, &log)
	ctx := context.Background()
	a, b := tenancytest.TenantA, tenancytest.TenantB
	reg.set(a, true) // suspended before the replicas start
	for _, app := range []*fx.App{app1, app2} {
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !r1.Suspended(a) || !r2.Suspended(a) {
		t.Fatal("a tenant suspended in the store is served after start")
	}

	reg.set(a, false)
	r1.Resume(a)
	if r1.Suspended(a) {
		t.Error("a local Resume did not apply at once")
	}
	within(t, "the other replica follows a resume", func() bool { return !r2.Suspended(a) })

	reg.set(b, true)
	r2.Suspend(b)
	if !r2.Suspended(b) {
		t.Error("a local Suspend did not apply at once")
	}
	within(t, "the other replica follows a suspension", func() bool { return r1.Suspended(b) })
	// Replica 2 keeps its own suspension until it has read the store
	// listing it once: wait for a whole read of it (one may be under way).
	n := reads2.Load()
	within(t, "replica 2 reads the store", func() bool { return reads2.Load() >= n+2 })
	reg.set(b, false)
	r1.Resume(b)
	within(t, "a suspension made locally and then recorded is lifted from the store", func() bool { return !r2.Suspended(b) })

	c := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-0000000000cc")
	r1.Suspend(c) // the store never lists it
	time.Sleep(100 * time.Millisecond)
	if !r1.Suspended(c) {
		t.Error("a refresh lifted a local suspension the store has not listed")
	}
	if r2.Suspended(c) {
		t.Error("a local suspension reached another replica without the store")
	}

	reg.mu.Lock()
	reg.fail = errors.New("registry down")
	reg.mu.Unlock()
	reg.set(b, true) // not seen while reads fail
	r1.Suspend(a)
	within(t, "a failed read is logged", func() bool { return strings.Contains(log.String(), "registry down") })
	if !r1.Suspended(a) || !r1.Suspended(c) || r2.Suspended(a) || r2.Suspended(b) {
		t.Error("a failed read changed the suspended set")
	}

	app3, _, _ := replica(t, reg, &log)
	if err := app3.Start(ctx); err == nil || !strings.Contains(err.Error(), "registry down") {
		t.Errorf("a replica whose first read fails started: %v", err)
		_ = app3.Stop(ctx)
	}
	for _, app := range []*fx.App{app1, app2} {
		if err := app.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSuspensionsCheckAllocatesNothing: the check every route runs takes
// no allocation, with a store-fed set in place.
func TestSuspensionsCheckAllocatesNothing(t *testing.T) {
	reg := &registry{ids: map[tenancy.ID]bool{tenancytest.TenantA: true}}
	app, tn, _ := replica(t, reg, &syncedLog{})
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(context.Background()) }()
	if err := tn.Check(tenancytest.TenantA, "b", "m", "r"); err == nil {
		t.Fatal("a tenant suspended in the store passed the check")
	}
	if n := testing.AllocsPerRun(1000, func() { _ = tn.Check(tenancytest.TenantB, "b", "m", "r") }); n != 0 {
		t.Errorf("Check allocates %.1f times per call", n)
	}
}

// TestOffboardWaitsARefreshForTheStoresSuspension: with LifecycleWith, an
// Offboard of a tenant the store lists runs no teardown before one refresh
// has passed since this replica first read it listed (by then every
// replica has read it); a deadline shorter than that fails with
// tenant_drain_timeout and removes nothing; a tenant the store does not
// list is not waited for.
func TestOffboardWaitsARefreshForTheStoresSuspension(t *testing.T) {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	reg := &registry{ids: map[tenancy.ID]bool{}}
	type core struct{}
	var tn *modules.Tenants
	var tornAt sync.Map
	const refresh = 300 * time.Millisecond
	app := fx.New(fx.NopLogger,
		modules.LifecycleWith(modules.LifecycleConfig{Suspended: reg.read, Refresh: refresh}),
		fx.Provide(func() core { return core{} }),
		modules.ProvideTenantState(func(core) modules.TenantState {
			return modules.TenantState{Module: "m", Backend: "kv", Offboard: func(_ context.Context, id tenancy.ID) error {
				tornAt.Store(id, time.Now())
				return nil
			}}
		}), fx.Populate(&tn))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(ctx) }()
	reg.set(a, true) // recorded in the store, read at the next refresh
	within(t, "the replica reads A's suspension", func() bool { return tn.Suspended(a) })
	read := time.Now()
	short, cancel := context.WithTimeout(ctx, refresh/10)
	defer cancel()
	if _, err := tn.Offboard(short, a); !errors.Is(err, tenancy.CodeTenantDrainTimeout) {
		t.Fatalf("an offboard whose deadline ends before a refresh: %v, want tenant_drain_timeout", err)
	}
	if _, ok := tornAt.Load(a); ok {
		t.Fatal("a teardown ran although the wait for the other replicas failed")
	}
	if _, err := tn.Offboard(ctx, a); err != nil {
		t.Fatal(err)
	}
	at, _ := tornAt.Load(a)
	if d := at.(time.Time).Sub(read); d < refresh-refresh/10 {
		t.Errorf("the teardown ran %s after the replica read the suspension, want at least one refresh (%s)", d, refresh)
	}
	start := time.Now()
	if _, err := tn.Offboard(ctx, b); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > refresh/2 {
		t.Errorf("an offboard of a tenant the store does not list waited %s", d)
	}
}
