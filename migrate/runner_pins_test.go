package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// reader is a gate's version read that counts its calls.
func reader(v int64, reads *int) func(context.Context) (int64, error) {
	return func(context.Context) (int64, error) { *reads++; return v, nil }
}

// A dry MigrateAll changes nothing a later check reads: the registry
// keeps the stale tenant's version, so the start-up check still refuses
// it, and the gate does not take the tenant for current, so its next
// call still reads its version (and is refused).
func TestDryMigrateAllLeavesVersionsAndGate(t *testing.T) {
	ctx := context.Background()
	for _, shared := range []bool{false, true} {
		mem, reg := newMem(), migrate.NewMemoryRegistry()
		_ = reg.Put(ctx, tenantA, migrate.Ready)
		gate := migrate.NewGate("m", "mem", 3)
		r := migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Registry: reg, Gate: gate, Shared: shared, PerTenant: true}, mem)
		rep, err := r.MigrateAll(ctx, nil, migrate.Options{DryRun: true})
		if err != nil || rep.Done == 0 || len(rep.Changes) == 0 || mem.runs != 0 {
			t.Fatalf("shared %v: dry run %+v %v, %d runs", shared, rep, err, mem.runs)
		}
		if all, _ := reg.List(ctx); all[0].Versions["m"] != 0 {
			t.Fatalf("shared %v: a dry run recorded version %d", shared, all[0].Versions["m"])
		}
		if err := gate.CheckRegistry(ctx, reg); tenancy.CodeOf(err) != tenancy.CodeTenantMigrationBehind {
			t.Fatalf("shared %v: the start-up check after a dry run: %v", shared, err)
		}
		reads := 0
		if err := gate.Check(ctx, tenantA, "", "r", reader(0, &reads)); tenancy.CodeOf(err) != tenancy.CodeTenantMigrationBehind || reads != 1 {
			t.Fatalf("shared %v: the stale tenant's call after a dry run: %v, %d reads", shared, err, reads)
		}
		if shared {
			reads = 0
			if err := gate.Check(ctx, tenancy.ID{}, "", "r", reader(0, &reads)); err == nil || reads != 1 {
				t.Fatalf("the shared target after a dry run: %v, %d reads", err, reads)
			}
		}
	}
}

// failTarget is a memTarget whose Provision, ProvisionBatch and
// teardowns fail for the tenant bad, after the others' part is done.
type failTarget struct {
	*memTarget
	bad  tenancy.ID
	seen [][]tenancy.ID
}

var errBad = errors.New("refused for this tenant")

func (t *failTarget) Batch() int { return 8 }

func (t *failTarget) ProvisionBatch(ctx context.Context, tenants []tenancy.ID) []error {
	t.seen = append(t.seen, tenants)
	errs := make([]error, len(tenants))
	for i, id := range tenants {
		if id == t.bad {
			errs[i] = errBad
			continue
		}
		errs[i] = t.Provision(ctx, id)
	}
	return errs
}

func (t *failTarget) Teardown(ctx context.Context, tenant tenancy.ID) error {
	if tenant == t.bad {
		return errBad // half done: the containers stay
	}
	return t.memTarget.Teardown(ctx, tenant)
}

// manyFail is a failTarget that tears many tenants down in one pass.
type manyFail struct{ *failTarget }

func (t manyFail) TeardownMany(ctx context.Context, tenants []tenancy.ID) []error {
	errs := make([]error, len(tenants))
	for i, id := range tenants {
		errs[i] = t.Teardown(ctx, id)
	}
	return errs
}

// In a provisioning batch, a zero id is refused before anything is
// written: no registry entry, no container; each real tenant gets its own
// result, so the one the target refused is the one reported and stays
// provisioning, and the others are ready.
func TestProvisionAllBatchZeroTenant(t *testing.T) {
	ctx := context.Background()
	c := tenancy.MustParseID("00000000-0000-4000-8000-0000000000c3")
	mem, reg := newMem(), migrate.NewMemoryRegistry()
	tgt := &failTarget{memTarget: mem, bad: tenantB}
	r := migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Registry: reg, PerTenant: true}, tgt)
	rep, err := r.ProvisionAll(ctx, []tenancy.ID{{}, tenantA, tenantB, c}, migrate.Options{Concurrency: 1})
	if err != nil || rep.Done != 2 || len(rep.Failures) != 2 {
		t.Fatalf("report %+v %v", rep, err)
	}
	for _, f := range rep.Failures {
		switch f.Tenant {
		case tenancy.ID{}:
			if tenancy.CodeOf(f.Err) != tenancy.CodeTenantUnbound {
				t.Fatalf("the zero tenant: %v", f.Err)
			}
		case tenantB:
			if !errors.Is(f.Err, errBad) {
				t.Fatalf("the refused tenant: %v", f.Err)
			}
		default:
			t.Fatalf("failure reported against %s: %v", f.Tenant, f.Err)
		}
	}
	if len(tgt.seen) != 1 || len(tgt.seen[0]) != 3 || tgt.seen[0][0] != tenantA {
		t.Fatalf("the target was asked for %v", tgt.seen)
	}
	all, _ := reg.List(ctx)
	states := map[tenancy.ID]migrate.State{}
	for _, e := range all {
		states[e.ID] = e.State
	}
	if len(all) != 3 || states[tenantA] != migrate.Ready || states[c] != migrate.Ready || states[tenantB] != migrate.Provisioning {
		t.Fatalf("registry %+v", all)
	}
	if len(mem.applied[tenantA]) != 3 || len(mem.applied[c]) != 3 || len(mem.applied[tenantB]) != 0 {
		t.Fatalf("applied %v", mem.applied)
	}
}

// A tenant whose migration failed during provisioning stays provisioning
// in the registry: it is not listed ready, so no start-up check, MigrateAll
// or worker takes it for served.
func TestProvisionFailedMigrationStaysProvisioning(t *testing.T) {
	ctx := context.Background()
	mem, reg := newMem(), migrate.NewMemoryRegistry()
	mem.failOn = 2
	r := migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Registry: reg, PerTenant: true}, mem)
	var se *migrate.StepError
	if err := r.Provision(ctx, tenantA); !errors.As(err, &se) || se.Tenant != tenantA {
		t.Fatalf("provision: %v", err)
	}
	all, _ := reg.List(ctx)
	if len(all) != 1 || all[0].State != migrate.Provisioning {
		t.Fatalf("registry after a failed migration: %+v", all)
	}
	if ready, _ := migrate.ReadyTenants(ctx, reg); len(ready) != 0 {
		t.Fatalf("listed ready: %v", ready)
	}
}

// After a teardown that failed halfway the gate has forgotten the tenant,
// on the single-tenant path and on the batched one: its next call reads
// its version again, and the registry still lists it for a rerun.
func TestTeardownFailedHalfwayForgetsTheGate(t *testing.T) {
	ctx := context.Background()
	for _, batched := range []bool{false, true} {
		mem, reg := newMem(), migrate.NewMemoryRegistry()
		gate := migrate.NewGate("m", "mem", 3)
		ft := &failTarget{memTarget: mem, bad: tenantA}
		var tgt migrate.Target = ft
		if batched {
			tgt = manyFail{ft}
		}
		r := migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Registry: reg, Gate: gate, PerTenant: true, AllowTeardown: true}, tgt)
		for _, id := range []tenancy.ID{tenantA, tenantB} {
			if err := r.Provision(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		reads := 0
		if err := gate.Check(ctx, tenantA, "", "r", reader(3, &reads)); err != nil || reads != 0 {
			t.Fatalf("batched %v: a provisioned tenant: %v, %d reads", batched, err, reads)
		}
		var err error
		if batched {
			errs := r.TeardownMany(ctx, []tenancy.ID{tenantB, tenantA})
			if errs[0] != nil {
				t.Fatalf("the other tenant's teardown: %v", errs[0])
			}
			err = errs[1]
		} else {
			err = r.Teardown(ctx, tenantA)
		}
		if !errors.Is(err, errBad) {
			t.Fatalf("batched %v: teardown: %v", batched, err)
		}
		torn := []tenancy.ID{tenantA}
		if batched {
			torn = append(torn, tenantB)
		}
		for _, id := range torn {
			reads = 0
			if err := gate.Check(ctx, id, "", "r", reader(0, &reads)); reads != 1 || !strings.Contains(err.Error(), "is at migration version 0") {
				t.Fatalf("batched %v: tenant %s after its teardown: %v, %d reads", batched, id, err, reads)
			}
		}
		// A stays listed for a rerun; B, when torn down, is gone.
		want := map[bool]int{false: 2, true: 1}[batched]
		if all, _ := reg.List(ctx); len(all) != want || all[0].ID != tenantA {
			t.Fatalf("batched %v: registry %+v", batched, all)
		}
	}
}
