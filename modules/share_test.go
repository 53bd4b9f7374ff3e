package modules_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

var shareRules = floors.Backend{Name: "toy", Ceiling: tenancy.Namespace, Kinds: map[floors.Kind]floors.KindRule{"kv": {Relations: []string{"keys"}}}}

// sharedGate is the gate of route "r" of module "m" (at most 8
// connections) in an app with a share of it.
func sharedGate(t *testing.T, s modules.Share) (*modules.Gate, *modules.Suspensions) {
	t.Helper()
	var susp *modules.Suspensions
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		modules.Provide(floors.Module{Name: "m", Backend: shareRules, WorstCaseConns: 8}),
		modules.TenantShare("m", s), fx.Populate(&susp))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	g := modules.NewGate(modules.LifecycleIn{Suspensions: susp}, shareRules, "m",
		floors.Route{Name: "r", Kind: "kv", TenantAware: true, Relations: []floors.Relation{{Role: "keys", Name: "k"}}})
	return g, susp
}

// A tenant at its share waits for one of its own calls to end, then is
// refused with tenant_share_exceeded; another tenant is served at once
// meanwhile; a call that waits is admitted when one of the tenant's ends.
func TestTenantShareBoundsOneTenant(t *testing.T) {
	g, _ := sharedGate(t, modules.Share{Calls: 2, Wait: 60 * time.Millisecond})
	a := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	b := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	var ends []func(error)
	for range 2 {
		_, _, end, err := g.Enter(a)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end)
	}
	start := time.Now()
	_, _, end, err := g.Enter(a)
	waited := time.Since(start)
	if e := tenancytest.RequireCode(t, err, tenancy.CodeTenantShareExceeded, "toy", "m", "r"); e != nil && e.Fix == "" {
		t.Error("no fix")
	}
	if end != nil || waited < 50*time.Millisecond {
		t.Fatalf("refused after %v (end %v): want a wait of the share's bound", waited, end != nil)
	}
	start = time.Now()
	_, _, endB, err := g.Enter(b)
	if err != nil || time.Since(start) > 20*time.Millisecond {
		t.Fatalf("B while A is at its share: %v after %v", err, time.Since(start))
	}
	endB(nil)

	got := make(chan error, 1)
	go func() {
		_, _, end, err := g.Enter(a)
		if end != nil {
			end(nil)
		}
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	ends[0](nil)
	if err := <-got; err != nil {
		t.Fatalf("a waiting call after one of A's ended: %v", err)
	}
	ends[1](nil)
}

// No more than the share of one tenant's calls run at once, under 64
// goroutines; a waiting call whose context ends returns its error; a
// suspended tenant is refused before it takes a place.
func TestTenantShareHoldsUnderLoad(t *testing.T) {
	g, susp := sharedGate(t, modules.Share{Calls: 3, Wait: 5 * time.Second})
	a := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	var running, peak atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 20 {
				_, _, end, err := g.Enter(a)
				if err != nil {
					t.Error(err)
					return
				}
				n := running.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(50 * time.Microsecond)
				running.Add(-1)
				end(nil)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p != 3 {
		t.Fatalf("peak of A's calls in flight %d, want its share 3", p)
	}

	var ends []func(error)
	for range 3 {
		_, _, end, _ := g.Enter(a)
		ends = append(ends, end)
	}
	ctx, cancel := context.WithTimeout(a, 20*time.Millisecond)
	defer cancel()
	if _, _, _, err := g.Enter(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiting call whose context ended: %v", err)
	}
	susp.Suspend(tenancytest.TenantA)
	start := time.Now()
	_, _, _, err := g.Enter(a)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantSuspended, "toy", "m", "r")
	if time.Since(start) > time.Second {
		t.Error("a suspended tenant waited for its share")
	}
	for _, end := range ends {
		end(nil)
	}
}

// A share that cannot be met is refused at fx.New with
// tenant_share_invalid.
func TestTenantShareRefusedAtNew(t *testing.T) {
	mod := modules.Provide(floors.Module{Name: "m", Backend: shareRules, WorstCaseConns: 8})
	for name, opts := range map[string][]fx.Option{
		"no such module":    {modules.Lifecycle(), mod, modules.TenantShare("n", modules.Share{Calls: 2})},
		"no lifecycle":      {mod, modules.TenantShare("m", modules.Share{Calls: 2})},
		"zero calls":        {modules.Lifecycle(), mod, modules.TenantShare("m", modules.Share{})},
		"negative calls":    {modules.Lifecycle(), mod, modules.TenantShare("m", modules.Share{Calls: -1})},
		"negative wait":     {modules.Lifecycle(), mod, modules.TenantShare("m", modules.Share{Calls: 2, Wait: -time.Second})},
		"the whole pool":    {modules.Lifecycle(), mod, modules.TenantShare("m", modules.Share{Calls: 8})},
		"above the pool":    {modules.Lifecycle(), mod, modules.TenantShare("m", modules.Share{Calls: 9})},
		"two of one module": {modules.Lifecycle(), mod, modules.TenantShare("m", modules.Share{Calls: 2}), modules.TenantShare("m", modules.Share{Calls: 3})},
	} {
		app := fx.New(append([]fx.Option{fx.NopLogger}, opts...)...)
		var te *tenancy.Error
		if !errors.As(app.Err(), &te) || te.Code != tenancy.CodeTenantShareInvalid || te.Fix == "" {
			t.Errorf("%s: %v", name, app.Err())
		}
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(), mod, modules.TenantShare("m", modules.Share{Calls: 7}))
	if err := app.Err(); err != nil {
		t.Fatalf("a share leaving one connection: %v", err)
	}
}

// TestTenantShareEntryAllocatesNothing: a call of a module with a share,
// through its gate and through an entry, allocates nothing once its
// tenant's stripe has a count: the count keeps one end for the share and
// the calls in flight. The end still leaves both: a drain of the tenant
// returns, and the tenant's next calls get their places back.
func TestTenantShareEntryAllocatesNothing(t *testing.T) {
	g, susp := sharedGate(t, modules.Share{Calls: 1})
	e := modules.NewEntry(g, func(context.Context, tenancy.ID) (int, func(), error) { return 1, nil, nil }, nil)
	a := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if n := testing.AllocsPerRun(500, func() {
		_, _, done, err := g.Call(a)
		if err != nil {
			t.Fatal(err)
		}
		done()
		_, _, _, done, err = e.Enter(a)
		if err != nil {
			t.Fatal(err)
		}
		done()
	}); n != 0 {
		t.Fatalf("%v allocations per call with a share, want 0", n)
	}
	// A drain flips the epoch: the ends of the other epoch leave too.
	for range 3 {
		_, _, done, err := g.Call(a)
		if err != nil {
			t.Fatal(err)
		}
		drained := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			drained <- susp.Drain(ctx, tenancytest.TenantA)
		}()
		time.Sleep(10 * time.Millisecond)
		done()
		if err := <-drained; err != nil {
			t.Fatalf("the drain did not see the call end: %v", err)
		}
	}
}
