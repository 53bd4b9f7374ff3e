package modules_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

func manyTenants(n int) []tenancy.ID {
	ids := make([]tenancy.ID, n)
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-a000-%012x", i+1))
	}
	return ids
}

// TestProvisionAllAndOffboardAll: ProvisionAll runs every tenant's
// Provision at most Concurrency at once, reports a failing tenant while
// the others complete and serves the ones done; OffboardAll suspends the
// whole list before the first teardown runs, hands a module with
// OffboardMany the tenants in batches (the others one by one), reports
// each tenant's failure, and leaves them suspended. The module parts are stand-ins: what is tested is
// the orchestration, which no server takes part in.
func TestProvisionAllAndOffboardAll(t *testing.T) {
	type core struct{}
	ids := manyTenants(40)
	bad := ids[7]
	var inFlight, most atomic.Int32
	var mu sync.Mutex
	provisioned := map[tenancy.ID]bool{}
	var tenants *modules.Tenants
	var bulk *bulkCore
	var sawActive atomic.Int32
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		fx.Provide(func() core { return core{} }),
		modules.ProvideTenantState(func(core) modules.TenantState {
			return modules.TenantState{Module: "m", Backend: "kv",
				Provision: func(ctx context.Context, id tenancy.ID) error {
					n := inFlight.Add(1)
					defer inFlight.Add(-1)
					for {
						m := most.Load()
						if n <= m || most.CompareAndSwap(m, n) {
							break
						}
					}
					if slices.Contains(ids[:3], id) {
						// The first three wait for each other: three
						// workers run at once.
						for deadline := time.Now().Add(5 * time.Second); most.Load() < 3 && time.Now().Before(deadline); {
							time.Sleep(time.Millisecond)
						}
					}
					if id == bad {
						return errors.New("refused")
					}
					mu.Lock()
					provisioned[id] = true
					mu.Unlock()
					return nil
				},
				Offboard: func(ctx context.Context, id tenancy.ID) error {
					for _, other := range ids {
						if !tenants.Suspended(other) {
							sawActive.Add(1)
						}
					}
					return nil
				}}
		}),
		fx.Provide(func() *bulkCore { return &bulkCore{} }),
		modules.ProvideTenantState(func(b *bulkCore) modules.TenantState {
			return modules.TenantState{Module: "n", Backend: "scan",
				Offboard: func(context.Context, tenancy.ID) error { b.single.Add(1); return nil },
				OffboardMany: func(_ context.Context, batch []tenancy.ID) []error {
					b.mu.Lock()
					defer b.mu.Unlock()
					b.batches++
					errs := make([]error, len(batch))
					for i, id := range batch {
						b.seen = append(b.seen, id)
						if id == bad {
							errs[i] = errors.New("walk failed")
						}
					}
					return errs
				}}
		}),
		fx.Populate(&tenants, &bulk))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tenants.SuspendAll(ids[:3]) // provisioned again, they are served
	rep := tenants.ProvisionAll(ctx, ids, migrate.Options{Concurrency: 3})
	if rep.Done != len(ids)-1 || len(rep.Failures) != 1 || rep.Failures[0].Tenant != bad || len(provisioned) != len(ids)-1 {
		t.Fatalf("provision report %+v, %d provisioned", rep, len(provisioned))
	}
	if most.Load() != 3 {
		t.Fatalf("%d tenants provisioned at once, want 3", most.Load())
	}
	for _, id := range ids[:3] {
		if tenants.Suspended(id) {
			t.Fatalf("tenant %s still suspended after its provisioning", id)
		}
	}

	rep = tenants.OffboardAll(ctx, append(ids, tenancy.ID{}), migrate.Options{Concurrency: 4})
	if rep.Done != len(ids)-1 || len(rep.Failures) != 2 {
		t.Fatalf("offboard report %+v", rep)
	}
	for _, f := range rep.Failures {
		if f.Tenant.IsZero() != errors.Is(f.Err, tenancy.CodeTenantUnbound) || (f.Tenant == bad) != strings.Contains(fmt.Sprint(f.Err), "n (scan): walk failed") {
			t.Fatalf("failure %+v", f)
		}
	}
	// The module that removes many tenants in one pass got every tenant
	// once, in batches that kept the four workers busy, and never one by one.
	if len(bulk.seen) != len(ids) || bulk.batches < 4 || bulk.single.Load() != 0 {
		t.Fatalf("OffboardMany saw %d tenants in %d batches; Offboard called %d times", len(bulk.seen), bulk.batches, bulk.single.Load())
	}
	if n := sawActive.Load(); n != 0 {
		t.Fatalf("teardowns saw %d tenants of the list not yet suspended", n)
	}
	for _, id := range ids {
		if !tenants.Suspended(id) {
			t.Fatalf("tenant %s served after its offboarding", id)
		}
	}
}

type bulkCore struct {
	mu      sync.Mutex
	seen    []tenancy.ID
	batches int
	single  atomic.Int32
}

// TestSuspendAllIsOneSwap: suspending and resuming 10,000 tenants at once
// takes one copy of the set each; suspending a suspended tenant or
// resuming an active one copies nothing (Provision resumes every tenant it
// provisions).
func TestSuspendAllIsOneSwap(t *testing.T) {
	s := &modules.Suspensions{}
	ids := manyTenants(10_000)
	s.SuspendAll(ids)
	for _, id := range ids {
		if !s.Suspended(id) {
			t.Fatalf("tenant %s not suspended", id)
		}
	}
	active := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	if n := testing.AllocsPerRun(100, func() { s.Resume(active); s.Suspend(ids[42]) }); n != 0 {
		t.Fatalf("an update that changes nothing allocated %.0f times: it copied the set", n)
	}
	s.ResumeAll(ids[:5000])
	if s.Suspended(ids[0]) || !s.Suspended(ids[5000]) {
		t.Fatal("ResumeAll resumed the wrong tenants")
	}
}
