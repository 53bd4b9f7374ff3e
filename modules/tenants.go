package modules

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

const tenantStateGroup = `group:"tenantwire_tenant_state"`

// TenantState is one module's part in a tenant's life: how it creates and
// removes what it holds for a tenant (schemas, roles, collections,
// topics). Backends contribute it with ProvideTenantState; a nil
// Provision means the module creates nothing ahead of a tenant's first
// call, a nil Offboard that it cannot remove a tenant's data; the report
// says so.
type TenantState struct {
	Module, Backend string
	Provision       func(ctx context.Context, tenant tenancy.ID) error
	// Plan, with Provision, is what Provision would do for the tenant,
	// doing nothing: ProvisionAll's dry run. Nil with a non-nil Provision:
	// the module has no dry run, and a dry run fails the tenant.
	Plan     func(ctx context.Context, tenant tenancy.ID) ([]migrate.Change, error)
	Offboard func(ctx context.Context, tenant tenancy.ID) error
	// OffboardMany, when set with Offboard, removes many tenants' data in
	// one pass, for a backend whose teardown walks its whole store (Redis's
	// SCAN); OffboardAll uses it. It returns one error per tenant, in order.
	OffboardMany func(ctx context.Context, tenants []tenancy.ID) []error
	// Verify, when set, scans on the server every family of data the
	// module declares for a tenant (the list its Offboard walks) and
	// returns what it checked and what is left; Offboard ends with it.
	// Nil: the module stores nothing it can check.
	Verify func(ctx context.Context, tenant tenancy.ID) (Erasure, error)
	// Export writes the tenant's records for Tenants.Export, Import
	// writes an archive's records into an empty tenant for Tenants.Import
	// (docs/archive.md); Version is the module's migration version, which
	// an archive records and an import must match. Nil: the module
	// cannot, and an archive lists it as skipped.
	Export  func(ctx context.Context, tenant tenancy.ID, out migrate.ArchiveOut) error
	Import  func(ctx context.Context, tenant tenancy.ID, in migrate.ArchiveIn) error
	Version int64
	// ImportsFrom, when set, says whether Import takes an archive
	// exported at another migration version (nil when it does, the
	// refusal otherwise); nil: Version only.
	ImportsFrom func(version int64) error
	// Placement, when set, makes the state one placement of a module
	// that offers several: its steps run only for the tenants placed
	// there.
	Placement *Placement
}

// Family, Leftover and Erasure are migrate's: a backend's Target declares
// its families there, next to its Teardown.
type (
	Family   = migrate.Family
	Leftover = migrate.Leftover
	Erasure  = migrate.Erasure
	Kept     = migrate.Kept
)

// ProvideTenantState adds the module's part in the app's tenant
// lifecycle, built from the module's core C when the app asks for it.
func ProvideTenantState[C any](build func(C) TenantState) fx.Option {
	return fx.Provide(fx.Annotate(func(c C) *TenantState { s := build(c); return &s }, fx.ResultTags(tenantStateGroup)))
}

// ProvideLifecycle provides a backend module's *migrate.Runner, built from
// the module's core C, as name:"<module>", and makes it the module's part
// in Tenants: the runner's Provision (when the module creates something
// ahead of a tenant's first call) and Teardown.
func ProvideLifecycle[C any](module, backend string, provisions bool, build func(C) *migrate.Runner) fx.Option {
	return ProvideLifecycleAt(module, backend, provisions, build, nil)
}

// ProvideLifecycleAt is ProvideLifecycle for one placement of a module
// that offers several (nil: a module of one placement): Tenants runs its
// steps for the tenants placed there only.
func ProvideLifecycleAt[C any](module, backend string, provisions bool, build func(C) *migrate.Runner, at *Placement) fx.Option {
	tag := `name:"` + module + `"`
	return fx.Options(
		fx.Provide(fx.Annotate(build, fx.ResultTags(tag))),
		fx.Provide(fx.Annotate(func(r *migrate.Runner) *TenantState {
			s := &TenantState{Module: module, Backend: backend, Offboard: r.Teardown, OffboardMany: r.TeardownMany, Placement: at}
			if r.Verifies() {
				s.Verify = r.Verify
			}
			s.Export, s.Version = r.Export, r.Version()
			if r.Archives() {
				s.Import, s.ImportsFrom = r.Import, r.ImportsFrom
			}
			if provisions {
				s.Provision, s.Plan = r.Provision, r.ProvisionPlan
			}
			return s
		}, fx.ParamTags(tag), fx.ResultTags(tenantStateGroup))),
	)
}

// Tenants runs a tenant's life across every module of the app: provision,
// suspend, resume, offboard. Include it with Lifecycle; every module then
// refuses a suspended tenant's calls with tenant_suspended, at once and
// without a restart.
type Tenants struct {
	states []*TenantState
	*Suspensions
	// moves is the moves under way in this process (Move), under
	// Suspensions.mu; Suspensions.movingHere counts them by tenant.
	moves map[placeKey]bool
	// imports is the imports under way in this process by tenant, each
	// closed when it ends (under Suspensions.mu).
	imports map[tenancy.ID]chan struct{}
}

// Suspensions is the app's suspended tenants, which every module's routes
// check on every call. It is apart from Tenants, which needs the modules'
// cores, so that the cores can take it.
type Suspensions struct {
	// suspended is an immutable set swapped whole, so a read takes no
	// lock and allocates nothing.
	suspended atomic.Pointer[map[tenancy.ID]struct{}]
	mu        sync.Mutex // serialises writers
	// pinned: local suspensions a store read (LifecycleWith) has not
	// listed yet, which a refresh keeps.
	pinned map[tenancy.ID]struct{}
	// flight counts the calls in flight (Enter), which Offboard waits for.
	flight inFlight
	// serving holds the long-running workers (Serve) told to stop on a
	// suspension, which Offboard waits for too.
	serving serving
	// refresh is LifecycleWith's delay between reads of the store (zero
	// without a store), and listed when each tenant the store lists was
	// first read listed: an Offboard waits one refresh from then, so every
	// replica has read the suspension before the teardown. Under mu.
	refresh time.Duration
	listed  map[tenancy.ID]time.Time
	// shares is the app's TenantShare bounds by module, fixed at build.
	shares shares
	// placed is every tenant's plan and placements (placement.go);
	// fences, the writes this replica's moves fence (move_fence.go).
	placed placedRef
	// movingHere counts the moves of each tenant under way in this
	// process (under mu): their records are this process's to write, so a
	// refresh from the store keeps them (followPlaced).
	movingHere map[tenancy.ID]int
	fences     atomic.Pointer[map[placeKey]struct{}]
}

// Lifecycle provides *Tenants and *Suspensions to the app. Without it no
// tenant is ever suspended and the modules' checks cost one nil test.
// Suspensions live in this process; LifecycleWith makes every replica
// follow a suspended set kept in the app's store.
func Lifecycle() fx.Option {
	return fx.Options(
		fx.Provide(fx.Annotate(func(decls []*shareDecl) *Suspensions {
			t := &Suspensions{}
			t.shares = sharesOf(decls, &t.flight)
			return t
		}, fx.ParamTags(shareGroup))),
		fx.Provide(fx.Annotate(func(states []*TenantState, s *Suspensions) *Tenants {
			t := &Tenants{states: states, Suspensions: s}
			slices.SortFunc(t.states, func(a, b *TenantState) int { return strings.Compare(a.Module, b.Module) })
			return t
		}, fx.ParamTags(tenantStateGroup, ``))),
	)
}

// StepReport is one module's outcome for one step.
type StepReport struct {
	Module, Backend string
	// Err is the module's failure; nil when it did its part.
	Err error
	// Skipped says why the module did nothing (it keeps no per-tenant
	// data it can remove).
	Skipped string
	// Checked is, after an Offboard, the families the module's verifier
	// scanned for the tenant on its server, and Left those in which it
	// still found the tenant's data (then Err is
	// tenant_erasure_incomplete).
	Checked []Family
	Left    []Leftover
	// Kept is, after an Offboard, what of the tenant the module cannot
	// remove and why (records in a shared Kafka topic, until retention).
	Kept []Kept
	// Started and Ended bound the module's step (after an Offboard, its
	// teardown and its verification).
	Started, Ended time.Time
}

// Report is a lifecycle step's outcome, one line per module.
type Report []StepReport

// Err joins every module's failure.
func (r Report) Err() error {
	var errs []error
	for _, s := range r {
		if s.Err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", s.Module, s.Backend, s.Err))
		}
	}
	return errors.Join(errs...)
}

// Provision creates tenant's containers in every module (each module's
// provisioning is idempotent, so a rerun after a failure completes it)
// and then makes the tenant active: a suspended or offboarded tenant
// provisioned again is served. It returns one line per module.
func (t *Tenants) Provision(ctx context.Context, tenant tenancy.ID) (Report, error) {
	if tenant.IsZero() {
		return nil, tenancy.Unbound()
	}
	if err := t.checkPlacements(tenant); err != nil {
		return nil, err
	}
	rep := t.each(tenant, t.holds, func(s *TenantState) (string, error) {
		if s.Provision == nil {
			return SkippedNothingToCreate, nil
		}
		return "", s.Provision(ctx, tenant)
	})
	if err := rep.Err(); err != nil {
		return rep, err
	}
	t.Resume(tenant)
	return rep, nil
}

// Offboard suspends tenant, waits until every call of the tenant that
// began before in this process has ended (units of work, idempotent
// calls, deliveries: see Suspensions.Enter), then removes its data from
// every module that can; so nothing a call started before writes lands
// after the teardown began. When ctx ends before those calls do, it
// returns tenant_drain_timeout and removes nothing. Then every module's
// verifier scans, on its server, each family it declares (the list its
// teardown walked): the report says what was checked, and anything of
// the tenant left fails the offboard with tenant_erasure_incomplete
// naming the module and the family. A rerun after a failure completes
// it; the tenant stays suspended (in this process only, unless the
// store lists it: see OffboardWith).
func (t *Tenants) Offboard(ctx context.Context, tenant tenancy.ID) (Report, error) {
	return t.OffboardWith(ctx, tenant, OffboardOptions{})
}

// OffboardOptions are OffboardWith's options.
type OffboardOptions struct {
	// RecordSuspended, when set, writes tenant's suspension to the app's
	// store (the one LifecycleConfig.Suspended reads) after the local
	// suspension and before anything is removed; Offboard then waits a
	// refresh from the write, so every replica has read it. A process
	// started after a crash mid-offboard reads it too and serves the
	// tenant nothing of what the teardown left, until a rerun completes
	// it. A failed write fails the offboard, nothing removed. Nil: the
	// suspension is this process's only (record it in the store first).
	RecordSuspended func(ctx context.Context, tenant tenancy.ID) error
}

// record writes tenant's suspension to the store (RecordSuspended set).
func (o OffboardOptions) record(ctx context.Context, tenant tenancy.ID) error {
	if err := o.RecordSuspended(ctx, tenant); err != nil {
		return fmt.Errorf("offboarding tenant %s: recording its suspension: %w; nothing was removed", tenant, err)
	}
	return nil
}

// OffboardWith is Offboard with o.
func (t *Tenants) OffboardWith(ctx context.Context, tenant tenancy.ID, o OffboardOptions) (Report, error) {
	if tenant.IsZero() {
		return nil, tenancy.Unbound()
	}
	t.Suspend(tenant)
	var recorded time.Time
	if o.RecordSuspended != nil {
		if err := o.record(ctx, tenant); err != nil {
			return nil, err
		}
		recorded = time.Now()
	}
	if err := t.awaitReplicasSince(ctx, recorded, tenant); err != nil {
		return nil, err
	}
	if err := t.Drain(ctx, tenant); err != nil {
		return nil, err
	}
	rep := t.each(tenant, t.mayHold, func(s *TenantState) (string, error) {
		if s.Offboard == nil {
			return SkippedNoTeardown, nil
		}
		return "", s.Offboard(ctx, tenant)
	})
	if err := rep.Err(); err != nil {
		return rep, err
	}
	t.verify(ctx, tenant, rep)
	if rep.Err() == nil {
		t.forgetCopies(tenant)
	}
	return rep, rep.Err()
}

// each runs step on every module's state that holds tenant (in, for a
// placed state: holds to provision, mayHold to erase); a placed state
// that does not is skipped, its line saying so.
func (t *Tenants) each(tenant tenancy.ID, in func(*TenantState, tenancy.ID) bool, step func(*TenantState) (string, error)) Report {
	rep := make(Report, 0, len(t.states))
	for _, s := range t.states {
		started := time.Now()
		if !in(s, tenant) {
			rep = append(rep, StepReport{Module: s.Module, Backend: s.Backend, Skipped: placedElsewhere(s), Started: started, Ended: started})
			continue
		}
		skipped, err := step(s)
		rep = append(rep, StepReport{Module: s.Module, Backend: s.Backend, Err: err, Skipped: skipped, Started: started, Ended: time.Now()})
	}
	return rep
}

// Suspend makes every route of every module refuse tenant's calls with
// tenant_suspended, from the next call on; its data stays.
func (t *Suspensions) Suspend(tenant tenancy.ID) { t.update(true, tenant) }

// Resume lifts a suspension.
func (t *Suspensions) Resume(tenant tenancy.ID) { t.update(false, tenant) }

// SuspendAll suspends every one of tenants in one swap of the set. A
// Suspend copies the whole set, so suspending n tenants one by one costs
// n² (9 s for 10,000 on a loaded 2-core machine); this costs one copy.
func (t *Suspensions) SuspendAll(tenants []tenancy.ID) { t.update(true, tenants...) }

// ResumeAll lifts the suspension of every one of tenants in one swap.
func (t *Suspensions) ResumeAll(tenants []tenancy.ID) { t.update(false, tenants...) }

func (t *Suspensions) update(suspend bool, tenants ...tenancy.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.suspended.Load()
	if !t.changes(cur, suspend, tenants) {
		// Nothing to do (Provision resumes every tenant it provisions,
		// most of them never suspended): no copy of the set.
		return
	}
	next := make(map[tenancy.ID]struct{}, 1)
	if cur != nil {
		next = make(map[tenancy.ID]struct{}, len(*cur)+len(tenants))
		for id := range *cur {
			next[id] = struct{}{}
		}
	}
	if t.pinned == nil {
		t.pinned = map[tenancy.ID]struct{}{}
	}
	for _, tenant := range tenants {
		if suspend {
			next[tenant] = struct{}{}
			t.pinned[tenant] = struct{}{}
		} else {
			delete(next, tenant)
			delete(t.pinned, tenant)
		}
	}
	t.suspended.Store(&next)
	if suspend {
		t.serving.notify(t.Suspended)
	}
}

// changes reports whether suspending (or resuming) tenants changes the set
// or the local pins. Called with mu held.
func (t *Suspensions) changes(cur *map[tenancy.ID]struct{}, suspend bool, tenants []tenancy.ID) bool {
	for _, id := range tenants {
		in := false
		if cur != nil {
			_, in = (*cur)[id]
		}
		_, pinned := t.pinned[id]
		if in != suspend || pinned != suspend {
			return true
		}
	}
	return false
}

// Suspended reports whether tenant is suspended.
func (t *Suspensions) Suspended(tenant tenancy.ID) bool {
	if t == nil {
		return false
	}
	m := t.suspended.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[tenant]
	return ok
}

// Check is what a route runs before its call: nil, or tenant_suspended
// naming the backend, module and route. A nil *Suspensions suspends nobody.
func (t *Suspensions) Check(tenant tenancy.ID, backend, module, route string) error {
	if !t.Suspended(tenant) {
		return nil
	}
	return &tenancy.Error{
		Code: tenancy.CodeTenantSuspended, Backend: backend, Module: module, Route: route,
		Detail: fmt.Sprintf("tenant %s is suspended; nothing was read or written", tenant),
		Fix:    "resume the tenant (Tenants.Resume, or Provision) to serve it again",
	}
}

// LifecycleIn is what a backend's core takes from the app: the
// suspensions its routes check and the telemetry they record with. Both
// are optional, so a module works in an app without Lifecycle or
// telemetry.
type LifecycleIn struct {
	fx.In
	Suspensions *Suspensions `optional:"true"`
	// Telemetry records the module's calls; nil when the app gives none.
	Telemetry *telemetry.Telemetry `optional:"true"`
}
