package modules_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// fenced builds Tenants over two stand-in modules whose teardown runs
// teardown.
func fenced(t *testing.T, teardown func(module string, id tenancy.ID)) *modules.Tenants {
	t.Helper()
	type core struct{}
	var tn *modules.Tenants
	part := func(name string) fx.Option {
		return modules.ProvideTenantState(func(core) modules.TenantState {
			return modules.TenantState{Module: name, Backend: "kv", Offboard: func(_ context.Context, id tenancy.ID) error {
				teardown(name, id)
				return nil
			}}
		})
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(), fx.Provide(func() core { return core{} }), part("a"), part("b"), fx.Populate(&tn))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return tn
}

// TestOffboardSuspendsBeforeAnyTeardown: a single Offboard has the tenant
// suspended, every route refusing it, before the first module removes
// anything.
func TestOffboardSuspendsBeforeAnyTeardown(t *testing.T) {
	var tn *modules.Tenants
	var ran, active atomic.Int32
	tn = fenced(t, func(_ string, id tenancy.ID) {
		ran.Add(1)
		if !tn.Suspended(id) || !errors.Is(tn.Check(id, "kv", "a", "r"), tenancy.CodeTenantSuspended) {
			active.Add(1)
		}
	})
	if _, err := tn.Offboard(context.Background(), tenancytest.TenantA); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 2 || active.Load() != 0 {
		t.Fatalf("%d teardowns ran, %d of them while the tenant was served; want 2 and 0", ran.Load(), active.Load())
	}
}

// TestOffboardWaitsForCallsInFlight: a call of the tenant that entered
// before the Offboard holds every teardown until it ends; meanwhile the
// tenant's new calls are refused and other tenants' are served.
func TestOffboardWaitsForCallsInFlight(t *testing.T) {
	var ended, early atomic.Bool
	tn := fenced(t, func(string, tenancy.ID) {
		if !ended.Load() {
			early.Store(true)
		}
	})
	a, b := tenancytest.TenantA, tenancytest.TenantB
	end, err := tn.Enter(a, "kv", "a", "r")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := tn.Offboard(context.Background(), a); done <- err }()
	for !tn.Suspended(a) {
		time.Sleep(time.Millisecond)
	}
	if _, err := tn.Enter(a, "kv", "a", "r"); !errors.Is(err, tenancy.CodeTenantSuspended) {
		t.Errorf("a call entering during the drain: %v, want tenant_suspended", err)
	}
	endB, err := tn.Enter(b, "kv", "a", "r")
	if err != nil {
		t.Fatalf("another tenant's call during the drain: %v", err)
	}
	endB()
	select {
	case err := <-done:
		t.Fatalf("Offboard returned (%v) while a call of the tenant was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	ended.Store(true)
	end()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if early.Load() {
		t.Fatal("a teardown ran before the call in flight ended")
	}
}

// TestOffboardDrainTimeout: when the Offboard's context ends before the
// tenant's call does, it returns tenant_drain_timeout, removes nothing and
// leaves the tenant suspended; a rerun after the call completes it.
func TestOffboardDrainTimeout(t *testing.T) {
	var ran atomic.Int32
	tn := fenced(t, func(string, tenancy.ID) { ran.Add(1) })
	a := tenancytest.TenantA
	end, err := tn.Enter(a, "kv", "a", "r")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rep, err := tn.Offboard(ctx, a)
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeTenantDrainTimeout || te.Fix == "" {
		t.Fatalf("Offboard with a call outliving its deadline: %v, want tenant_drain_timeout", err)
	}
	if ran.Load() != 0 || len(rep) != 0 || !tn.Suspended(a) {
		t.Fatalf("after the timeout: %d teardowns, report %v, suspended %v; want none, none, true", ran.Load(), rep, tn.Suspended(a))
	}
	rr := tn.OffboardAll(ctx, []tenancy.ID{a}, migrate.Options{})
	if len(rr.Failures) != 1 || !errors.Is(rr.Failures[0].Err, tenancy.CodeTenantDrainTimeout) || ran.Load() != 0 {
		t.Fatalf("OffboardAll with a call in flight past its deadline: %v, %d teardowns", rr.Failures, ran.Load())
	}
	end()
	if _, err := tn.Offboard(context.Background(), a); err != nil || ran.Load() != 2 {
		t.Fatalf("rerun: %v, %d teardowns; want nil and 2", err, ran.Load())
	}
}

// TestOffboardStopsAndWaitsForWorkers: a long-running worker of the tenant
// (Serve) is told to stop the moment the tenant is suspended, and the
// teardown waits until it has ended; a suspended tenant gets no worker.
func TestOffboardStopsAndWaitsForWorkers(t *testing.T) {
	var ended, early atomic.Bool
	tn := fenced(t, func(string, tenancy.ID) {
		if !ended.Load() {
			early.Store(true)
		}
	})
	a := tenancytest.TenantA
	stop, end, err := tn.Serve(a, "kv", "a", "reader")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := tn.Offboard(context.Background(), a); done <- err }()
	select {
	case <-stop:
	case <-time.After(2 * time.Second):
		t.Fatal("the worker was not told to stop when its tenant was suspended")
	}
	if _, _, err := tn.Serve(a, "kv", "a", "reader"); !errors.Is(err, tenancy.CodeTenantSuspended) {
		t.Errorf("a worker of a suspended tenant: %v, want tenant_suspended", err)
	}
	time.Sleep(50 * time.Millisecond)
	ended.Store(true)
	end()
	end() // twice is once
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if early.Load() {
		t.Fatal("a teardown ran before the worker had stopped")
	}
}

// TestEnterAllocatesNothing: entering and ending a call, the fence every
// route runs, takes no allocation.
func TestEnterAllocatesNothing(t *testing.T) {
	tn := fenced(t, func(string, tenancy.ID) {})
	tn.Suspend(tenancytest.TenantA)
	if n := testing.AllocsPerRun(1000, func() {
		end, err := tn.Enter(tenancytest.TenantB, "kv", "m", "r")
		if err != nil {
			t.Fatal(err)
		}
		end()
	}); n != 0 {
		t.Errorf("Enter allocates %.1f times per call", n)
	}
	var none *modules.Suspensions
	end, err := none.Enter(tenancytest.TenantA, "kv", "m", "r")
	if err != nil || end == nil {
		t.Fatalf("nil Suspensions: %v", err)
	}
	end()
}

// TestActiveTenantsOfLeavesOutSuspended: the worker's set is the ready
// tenants less the suspended ones, read again on every call.
func TestActiveTenantsOfLeavesOutSuspended(t *testing.T) {
	tn := fenced(t, func(string, tenancy.ID) {})
	reg := migrate.NewMemoryRegistry()
	a, b := tenancytest.TenantA, tenancytest.TenantB
	ctx := context.Background()
	for _, id := range []tenancy.ID{a, b} {
		if err := reg.Put(ctx, id, migrate.Ready); err != nil {
			t.Fatal(err)
		}
	}
	set := modules.ActiveTenantsOf(reg, tn.Suspensions)
	tn.Suspend(a)
	if ids, err := set(ctx); err != nil || len(ids) != 1 || ids[0] != b {
		t.Fatalf("with A suspended the set is %v (%v), want only B", ids, err)
	}
	tn.Resume(a)
	if ids, _ := set(ctx); len(ids) != 2 {
		t.Fatalf("with A resumed the set is %v, want both", ids)
	}
}

// BenchmarkEnter is a route's fence (enter, then end) against the check
// alone it replaces.
func BenchmarkEnter(b *testing.B) {
	s := &modules.Suspensions{}
	s.Suspend(tenancytest.TenantA)
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			_ = s.Check(tenancytest.TenantB, "kv", "m", "r")
		}
	})
	b.Run("enter", func(b *testing.B) {
		for b.Loop() {
			end, _ := s.Enter(tenancytest.TenantB, "kv", "m", "r")
			end()
		}
	})
	b.Run("enter-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				end, _ := s.Enter(tenancytest.TenantB, "kv", "m", "r")
				end()
			}
		})
	})
}
