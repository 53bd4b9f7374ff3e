package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// memTarget is a backend kept in memory, to test the runner's order of
// work (the adapters run the same runner against their real servers):
// each container's applied steps, a step that fails, the containers made.
type memTarget struct {
	mu       sync.Mutex
	applied  map[tenancy.ID][]migrate.Applied
	made     map[tenancy.ID]bool
	failOn   int64 // a step version that fails
	batches  [][]tenancy.ID
	batch    int
	claimed  map[string]bool // steps another migrator holds
	runs     int
	atomicTx bool
	// order is every applied step's container, in the order applied;
	// sharedSlow delays each of the shared target's steps and sharedFails
	// fails them.
	order       []tenancy.ID
	sharedSlow  time.Duration
	sharedFails bool
}

func newMem() *memTarget {
	return &memTarget{applied: map[tenancy.ID][]migrate.Applied{}, made: map[tenancy.ID]bool{}, claimed: map[string]bool{}}
}

type memHistory struct {
	t      *memTarget
	tenant tenancy.ID
	ran    []migrate.Applied
}

func (t *memTarget) Open(_ context.Context, tenant tenancy.ID, _ bool) ([]migrate.History, error) {
	return []migrate.History{&memHistory{t: t, tenant: tenant}}, nil
}

func (t *memTarget) Provision(_ context.Context, tenant tenancy.ID) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.made[tenant] = true
	return nil
}

func (t *memTarget) Teardown(_ context.Context, tenant tenancy.ID) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.made, tenant)
	delete(t.applied, tenant)
	return nil
}

func (h *memHistory) Key() string { return "" }

func (h *memHistory) Applied(context.Context) ([]migrate.Applied, error) {
	h.t.mu.Lock()
	defer h.t.mu.Unlock()
	return slices.Clone(h.t.applied[h.tenant]), nil
}

func (h *memHistory) Claim(_ context.Context, st migrate.Step) (bool, error) {
	if h.t.claimed[h.tenant.String()+st.Name] {
		return false, migrate.ErrStepClaimed
	}
	return true, nil
}

func (h *memHistory) Apply(_ context.Context, st migrate.Step) error {
	shared := h.tenant == tenancy.ID{}
	if shared {
		time.Sleep(h.t.sharedSlow)
	}
	h.t.mu.Lock()
	defer h.t.mu.Unlock()
	h.t.runs++
	h.t.order = append(h.t.order, h.tenant)
	if shared && h.t.sharedFails {
		return &migrate.StepError{Statement: "boom;", Err: errors.New("refused")}
	}
	if st.Version == h.t.failOn {
		return &migrate.StepError{Statement: "boom;", Err: errors.New("refused")}
	}
	a := migrate.Applied{Version: st.Version, Name: st.Name, Checksum: st.Checksum}
	if h.t.atomicTx {
		h.ran = append(h.ran, a)
	} else {
		h.t.applied[h.tenant] = append(h.t.applied[h.tenant], a)
	}
	return nil
}

func (h *memHistory) Close(_ context.Context, failed error) error {
	h.t.mu.Lock()
	defer h.t.mu.Unlock()
	if failed == nil {
		h.t.applied[h.tenant] = append(h.t.applied[h.tenant], h.ran...)
	}
	return nil
}

// memBatch is a memTarget that provisions a batch in one call.
type memBatch struct{ *memTarget }

func (t memBatch) Batch() int { return t.batch }

func (t memBatch) ProvisionBatch(ctx context.Context, tenants []tenancy.ID) []error {
	t.mu.Lock()
	t.batches = append(t.batches, slices.Clone(tenants))
	t.mu.Unlock()
	errs := make([]error, len(tenants))
	for i, tn := range tenants {
		errs[i] = t.Provision(ctx, tn)
	}
	return errs
}

func threeSteps(t *testing.T) migrate.Set {
	t.Helper()
	set, err := migrate.Load(fstest.MapFS{"1_a.sql": {Data: []byte("a")}, "2_b.sql": {Data: []byte("b")}, "3_c.sql": {Data: []byte("c")}}, "sql")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

var (
	tenantA = tenancy.MustParseID("00000000-0000-4000-8000-0000000000a1")
	tenantB = tenancy.MustParseID("00000000-0000-4000-8000-0000000000b2")
)

// TestRunnerProvisionMigratesAndRegisters: Provision creates the
// containers, applies the set and records the tenant ready at the newest
// version, letting it through the gate; a rerun applies nothing; Teardown
// refuses without AllowTeardown, then removes the tenant from the
// registry and the gate.
func TestRunnerProvisionMigratesAndRegisters(t *testing.T) {
	ctx := context.Background()
	mem, reg := newMem(), migrate.NewMemoryRegistry()
	gate := migrate.NewGate("m", "mem", 3)
	spec := migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Registry: reg, Gate: gate, PerTenant: true}
	r := migrate.NewRunner(spec, mem)
	if err := r.Provision(ctx, tenancy.ID{}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("the zero tenant: %v", err)
	}
	if err := r.Provision(ctx, tenantA); err != nil {
		t.Fatal(err)
	}
	if !mem.made[tenantA] || len(mem.applied[tenantA]) != 3 {
		t.Fatalf("made %v, applied %v", mem.made, mem.applied[tenantA])
	}
	all, _ := reg.List(ctx)
	if len(all) != 1 || all[0].State != migrate.Ready || all[0].Versions["m"] != 3 {
		t.Fatalf("registry %+v", all)
	}
	if err := gate.Check(ctx, tenantA, "", "r", func(context.Context) (int64, error) { return 0, errors.New("read") }); err != nil {
		t.Fatalf("a tenant the runner migrated is read again: %v", err)
	}
	if ch, err := r.Migrate(ctx, tenantA); err != nil || len(ch) != 0 {
		t.Fatalf("rerun: %v %v", ch, err)
	}
	if err := r.Teardown(ctx, tenantA); !errors.Is(err, migrate.ErrTeardownDisabled) {
		t.Fatalf("teardown without AllowTeardown: %v", err)
	}
	spec.AllowTeardown = true
	r = migrate.NewRunner(spec, mem)
	if err := r.Teardown(ctx, tenancy.ID{}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("teardown of the zero tenant: %v", err)
	}
	if err := r.Teardown(ctx, tenantA); err != nil {
		t.Fatal(err)
	}
	if all, _ := reg.List(ctx); len(all) != 0 || mem.made[tenantA] {
		t.Fatalf("after teardown: registry %+v, made %v", all, mem.made)
	}
	if err := gate.Check(ctx, tenantA, "", "r", func(context.Context) (int64, error) { return 0, nil }); tenancy.CodeOf(err) != tenancy.CodeTenantMigrationBehind {
		t.Fatalf("the gate still lets a torn-down tenant through: %v", err)
	}
}

// TestRunnerStepFailure: a failing step is a *migrate.StepError naming
// the tenant, module, backend, file and statement; on an atomic backend
// the run's earlier steps are not reported (they were rolled back), on the
// others they are; the registry keeps the old version; a step another
// migrator holds fails the tenant with ErrStepClaimed.
func TestRunnerStepFailure(t *testing.T) {
	ctx := context.Background()
	for _, atomic := range []bool{true, false} {
		mem, reg := newMem(), migrate.NewMemoryRegistry()
		mem.failOn, mem.atomicTx = 2, atomic
		r := migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Registry: reg, PerTenant: true, Atomic: atomic}, mem)
		_ = reg.Put(ctx, tenantA, migrate.Ready)
		ch, err := r.Migrate(ctx, tenantA)
		var se *migrate.StepError
		if !errors.As(err, &se) || se.Tenant != tenantA || se.Module != "m" || se.Backend != "mem" || se.File != "0002_b.sql" || se.Statement != "boom;" {
			t.Fatalf("atomic %v: %#v", atomic, err)
		}
		if want := map[bool]int{true: 0, false: 1}[atomic]; len(ch) != want {
			t.Errorf("atomic %v: %d changes reported, want %d", atomic, len(ch), want)
		}
		if all, _ := reg.List(ctx); all[0].Versions["m"] != 0 {
			t.Errorf("atomic %v: the registry moved to %d", atomic, all[0].Versions["m"])
		}
	}
	mem := newMem()
	mem.claimed[tenantA.String()+"a"] = true
	r := migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), PerTenant: true}, mem)
	if _, err := r.Migrate(ctx, tenantA); !errors.Is(err, migrate.ErrStepClaimed) || mem.runs != 0 {
		t.Fatalf("a claimed step: %v, %d runs", err, mem.runs)
	}
}

// TestRunnerTargets: a module with only a shared target migrates it once
// whatever the tenants; one with both runs the shared target first, then
// each tenant (the registry's when none are given); a dry run lists and
// applies nothing; a per-tenant module refuses the zero tenant.
func TestRunnerTargets(t *testing.T) {
	ctx := context.Background()
	mem := newMem()
	r := migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Shared: true}, mem)
	rep, err := r.MigrateAll(ctx, []tenancy.ID{tenantA, tenantB}, migrate.Options{})
	if err != nil || rep.Total != 1 || len(rep.Changes) != 3 || len(mem.applied[tenancy.ID{}]) != 3 {
		t.Fatalf("shared: %+v %v", rep, err)
	}
	if ch, err := r.Migrate(ctx, tenantA); err != nil || len(ch) != 0 {
		t.Fatalf("a tenant of a shared-only module: %v %v", ch, err)
	}

	mem, reg := newMem(), migrate.NewMemoryRegistry()
	_ = reg.Put(ctx, tenantB, migrate.Ready)
	r = migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Registry: reg, Shared: true, PerTenant: true}, mem)
	plan, err := r.MigrateAll(ctx, nil, migrate.Options{DryRun: true})
	if err != nil || len(plan.Changes) != 6 || plan.Changes[0].Tenant != (tenancy.ID{}) || mem.runs != 0 {
		t.Fatalf("dry run: %+v %v, %d runs", plan, err, mem.runs)
	}
	if rep, err := r.MigrateAll(ctx, nil, migrate.Options{Concurrency: 1}); err != nil || rep.Done != 2 || len(mem.applied[tenantB]) != 3 {
		t.Fatalf("shared and per tenant: %+v %v", rep, err)
	}
	r = migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), PerTenant: true}, mem)
	if _, err := r.Migrate(ctx, tenancy.ID{}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("the zero tenant: %v", err)
	}
	if _, err := r.MigrateAll(ctx, nil, migrate.Options{}); err == nil {
		t.Fatal("MigrateAll with no tenants and no registry ran")
	}
}

// TestRunnerSharedFirst: the shared target's steps all run before any
// tenant's, however many run at once, since a tenant's steps may build on
// them; a shared target that fails stops the run before any tenant, and
// the report says why.
func TestRunnerSharedFirst(t *testing.T) {
	ctx := context.Background()
	var tenants []tenancy.ID
	for i := range 8 {
		tenants = append(tenants, tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-0000000000%02d", i+10)))
	}
	for _, dry := range []bool{false, true} {
		mem := newMem()
		mem.sharedSlow = 20 * time.Millisecond
		r := migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Shared: true, PerTenant: true}, mem)
		rep, err := r.MigrateAll(ctx, tenants, migrate.Options{Concurrency: 4, DryRun: dry})
		if err != nil || rep.Total != 9 || rep.Done != 9 || len(rep.Changes) != 27 {
			t.Fatalf("dry run %v: %+v %v", dry, rep, err)
		}
		for i, c := range rep.Changes {
			if shared := c.Tenant == (tenancy.ID{}); shared != (i < 3) {
				t.Fatalf("dry run %v: change %d is %+v: the shared target's changes come first", dry, i, c)
			}
		}
		if !dry && !slices.Equal(mem.order[:3], make([]tenancy.ID, 3)) {
			t.Fatalf("a tenant's step ran before the shared target's: %v", mem.order)
		}
	}

	mem := newMem()
	mem.sharedFails = true
	r := migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Shared: true, PerTenant: true}, mem)
	rep, err := r.MigrateAll(ctx, tenants, migrate.Options{Concurrency: 4})
	if err != nil || rep.Total != 9 || rep.Done != 0 || len(rep.Failures) != 1 || rep.Failures[0].Tenant != (tenancy.ID{}) {
		t.Fatalf("a failed shared target: %+v %v", rep, err)
	}
	if rep.Err == nil || !strings.Contains(rep.Err.Error(), "no tenant was migrated") || mem.runs != 1 {
		t.Fatalf("a failed shared target: Err %v, %d steps ran", rep.Err, mem.runs)
	}
}

// TestRunnerProvisionAllBatches: a target that provisions many tenants at
// once gets batches of its size; each tenant is then migrated and
// recorded ready; a target that cannot list what it would create has no
// dry run (ErrNoProvisionPlan).
func TestRunnerProvisionAllBatches(t *testing.T) {
	ctx := context.Background()
	mem, reg := newMem(), migrate.NewMemoryRegistry()
	mem.batch = 2
	r := migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Registry: reg, PerTenant: true}, memBatch{mem})
	ids := []tenancy.ID{tenantA, tenantB, tenancy.MustParseID("00000000-0000-4000-8000-0000000000c3")}
	rep, err := r.ProvisionAll(ctx, ids, migrate.Options{Concurrency: 1})
	if err != nil || rep.Done != 3 || len(mem.batches) != 2 || len(mem.batches[0]) != 2 {
		t.Fatalf("%+v %v, batches %v", rep, err, mem.batches)
	}
	ready, _ := migrate.ReadyTenants(ctx, reg)
	if len(ready) != 3 || len(mem.applied[ids[2]]) != 3 {
		t.Fatalf("ready %v, applied %v", ready, mem.applied)
	}
	if _, err := r.ProvisionAll(ctx, ids, migrate.Options{DryRun: true}); !errors.Is(err, migrate.ErrNoProvisionPlan) {
		t.Fatalf("ProvisionAll's dry run on a target that cannot plan: %v", err)
	}
	_, err = r.ProvisionPlan(ctx, ids[0])
	if !errors.Is(err, migrate.ErrNoProvisionPlan) {
		t.Fatalf("ProvisionPlan on a target that cannot plan: %v", err)
	}
	if tenancy.CodeOf(err) != tenancy.CodeOperatorRequestInvalid || !strings.Contains(err.Error(), "fix: ") {
		t.Fatalf("the refusal carries no code or fix: %v", err)
	}
}

// memPlanner is a memTarget that lists what its Provision would create:
// a container per tenant not made yet.
type memPlanner struct{ *memTarget }

func (t memPlanner) PlanProvision(_ context.Context, tenant tenancy.ID) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.made[tenant] {
		return nil, nil
	}
	return []string{"c-" + tenant.Hex()}, nil
}

// TestRunnerProvisionAllDryRun: on a ProvisionPlanner, ProvisionAll's dry
// run reports each tenant's containers to create and its pending steps,
// and creates, applies and registers nothing; a tenant already made has
// nothing to create; the zero tenant is unbound.
func TestRunnerProvisionAllDryRun(t *testing.T) {
	ctx := context.Background()
	mem, reg := newMem(), migrate.NewMemoryRegistry()
	mem.made[tenantB] = true
	r := migrate.NewRunner(migrate.Spec{Module: "m", Backend: "mem", Set: threeSteps(t), Registry: reg, PerTenant: true}, memPlanner{mem})
	rep, err := r.ProvisionAll(ctx, []tenancy.ID{tenantA, tenantB, {}}, migrate.Options{DryRun: true, Concurrency: 1})
	if err != nil || rep.Done != 2 || len(rep.Failures) != 1 || tenancy.CodeOf(rep.Failures[0].Err) != tenancy.CodeTenantUnbound {
		t.Fatalf("dry run: %+v %v", rep, err)
	}
	var creates []string
	steps := map[tenancy.ID]int{}
	for _, c := range rep.Changes {
		if c.Create != "" {
			creates = append(creates, c.Create)
		} else {
			steps[c.Tenant]++
		}
	}
	if !slices.Equal(creates, []string{"c-" + tenantA.Hex()}) || steps[tenantA] != 3 || steps[tenantB] != 3 {
		t.Fatalf("dry run creates %v, steps %v", creates, steps)
	}
	if all, _ := reg.List(ctx); len(all) != 0 || mem.made[tenantA] || mem.runs != 0 {
		t.Fatalf("a dry run changed something: registry %v, made %v, %d runs", all, mem.made, mem.runs)
	}
}
