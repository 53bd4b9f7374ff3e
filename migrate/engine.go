package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Target is a backend module's side of the tenant lifecycle: where its
// migration histories are, how a step runs, and what creating and
// removing a tenant's containers mean. The Runner drives it, so the
// order of a run (history check, claim, apply, registry, version gate)
// is written once.
type Target interface {
	// Open opens, for one run, the histories of tenant's targets: one per
	// container that records its own steps (a schema, a database; Neo4j
	// may have several per tenant), or the module's shared one for the
	// zero tenant. dry opens them to read only.
	Open(ctx context.Context, tenant tenancy.ID, dry bool) ([]History, error)
	// Provision creates tenant's containers (idempotent); Teardown
	// removes its data. The Runner checks the tenant and AllowTeardown
	// first, and does the registry and the version gate.
	Provision(ctx context.Context, tenant tenancy.ID) error
	Teardown(ctx context.Context, tenant tenancy.ID) error
}

// History is one target's record of applied steps, open for one run.
type History interface {
	// Key names the target for the version gate ("" when a tenant has
	// one target wherever it is served).
	Key() string
	// Applied is what the target records as run.
	Applied(ctx context.Context) ([]Applied, error)
	// Claim takes a pending step for this run: false when another
	// migrator applied it meanwhile, an error wrapping ErrStepClaimed
	// while another one holds it. A backend that holds a lock on the
	// tenant for the whole run claims every step.
	Claim(ctx context.Context, st Step) (bool, error)
	// Apply runs a claimed step and records it, or releases the claim
	// when it fails. A backend that can applies the run's steps and
	// their records in one transaction, committed by Close.
	Apply(ctx context.Context, st Step) error
	// Close ends the run: it commits what Apply did when failed is nil,
	// rolls it back otherwise, and frees the connection.
	Close(ctx context.Context, failed error) error
}

// Spec is what a Runner knows of its module.
type Spec struct {
	Module, Backend string
	Set             Set
	// Registry records the module's tenants and versions (nil: none).
	Registry Registry
	// Gate is the module's RequiredVersion check (nil: none): a run marks
	// the targets it brought current, a teardown forgets the tenant.
	Gate *Gate
	// Shared: the set runs once on a target every tenant shares, named
	// by the zero tenant; PerTenant: on each tenant's own targets. A
	// module may have both.
	Shared, PerTenant bool
	// Atomic: a tenant's run is one transaction, so a failed step undoes
	// the steps before it.
	Atomic bool
	// AllowTeardown is the module's modules.AllowTeardown option.
	AllowTeardown bool
}

// ErrStepClaimed: another migrator is applying the step; the tenant is
// reported failed for this run and a rerun completes it.
var ErrStepClaimed = errors.New("another migrator is applying this step; rerun once it finished")

// ErrTeardownDisabled is what a module's teardown returns unless the module
// was built with modules.AllowTeardown: removing a tenant's
// data is never a default.
var ErrTeardownDisabled = errors.New("teardown is disabled (build the module with modules.AllowTeardown)")

// StepError is a migration step that failed for one tenant (zero: the
// shared target); the others go on. On an Atomic backend the tenant stays
// at its previous version; otherwise the step is not recorded, and a rerun
// repeats it.
type StepError struct {
	Tenant                           tenancy.ID
	Module, Backend, File, Statement string
	Err                              error
}

func (e *StepError) Error() string {
	who := "the shared target"
	if !e.Tenant.IsZero() {
		who = "tenant " + e.Tenant.String()
	}
	at := ""
	if e.Statement != "" {
		at = fmt.Sprintf(" at %q", e.Statement)
	}
	return fmt.Sprintf("%s: module %s: migration %s failed for %s%s: %v", e.Backend, e.Module, e.File, who, at, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// CheckTeardown is what every teardown checks first: that the module
// allows it, and that a tenant is named (never the zero tenant, which
// would name every tenant's shared containers).
func CheckTeardown(allowed bool, tenant tenancy.ID) error {
	if !allowed {
		return ErrTeardownDisabled
	}
	if tenant.IsZero() {
		return tenancy.Unbound()
	}
	return nil
}

// Runner is a module's tenant lifecycle: provisioning, migrations and
// teardown, one tenant at a time or every tenant with bounded
// concurrency. Every backend module with a lifecycle provides one as
// *migrate.Runner name:"<module>".
type Runner struct {
	s Spec
	t Target
}

// NewRunner is the lifecycle of a module, for its backend.
func NewRunner(s Spec, t Target) *Runner { return &Runner{s: s, t: t} }

func (r *Runner) unbound() error {
	e := tenancy.Unbound()
	e.Module, e.Backend = r.s.Module, r.s.Backend
	return e
}

// Provision creates tenant's containers, applies the module's migrations
// to them, and records the tenant in the registry: provisioning first,
// ready once done, so a crash in between leaves it provisioning and a
// rerun (Provision is idempotent) completes it.
func (r *Runner) Provision(ctx context.Context, tenant tenancy.ID) error {
	if tenant.IsZero() {
		return r.unbound()
	}
	if err := r.put(ctx, []tenancy.ID{tenant}, Provisioning)[0]; err != nil {
		return err
	}
	if err := r.t.Provision(ctx, tenant); err != nil {
		return err
	}
	return r.provisioned(ctx, tenant)
}

// provisioned is what follows a tenant's containers: its migrations, then
// its registry entry.
func (r *Runner) provisioned(ctx context.Context, tenant tenancy.ID) error {
	if _, err := r.Migrate(ctx, tenant); err != nil {
		return err
	}
	if _, ok := r.s.Registry.(ModuleRemover); ok && (len(r.s.Set) == 0 || !r.s.PerTenant) {
		// Migrate recorded no version of the tenant (the module has no
		// migrations, or only its shared target's, now current): record
		// it here, so that the tenant stays listed until this module has
		// torn it down too.
		if err := r.s.Registry.SetVersion(ctx, tenant, r.s.Module, r.s.Set.Latest()); err != nil {
			return err
		}
	}
	return r.put(ctx, []tenancy.ID{tenant}, Ready)[0]
}

func (r *Runner) put(ctx context.Context, tenants []tenancy.ID, s State) []error {
	errs := make([]error, len(tenants))
	if r.s.Registry != nil {
		for i, t := range tenants {
			errs[i] = r.s.Registry.Put(ctx, t, s)
		}
	}
	return errs
}

// ProvisionShared creates the module's containers that no tenant owns
// (Kafka's static topics on a shared client) and migrates its shared
// target. Where a backend creates shared containers with each tenant's,
// only the migrations run.
func (r *Runner) ProvisionShared(ctx context.Context) error {
	if err := r.t.Provision(ctx, tenancy.ID{}); err != nil {
		return err
	}
	if !r.s.Shared {
		return nil
	}
	_, err := r.Migrate(ctx, tenancy.ID{})
	return err
}

// Teardown removes tenant's data and its registry entry. It refuses
// unless the module was built with AllowTeardown (ErrTeardownDisabled).
// The tenant's next call reads its version again, even after a partial
// teardown.
func (r *Runner) Teardown(ctx context.Context, tenant tenancy.ID) error {
	if err := r.checkTeardown(tenant); err != nil {
		return err
	}
	defer r.s.Gate.Forget(tenant)
	if err := r.t.Teardown(ctx, tenant); err != nil {
		return err
	}
	return r.forget(ctx, tenant)
}

// manyTarget is a Target that removes many tenants' data in one pass
// (one walk of a shared store instead of one a tenant). It returns one
// error per tenant, in order.
type manyTarget interface {
	TeardownMany(ctx context.Context, tenants []tenancy.ID) []error
}

// TeardownMany is Teardown for many tenants, one error each, in order.
// A manyTarget gets the permitted tenants whole; another target each in
// turn.
func (r *Runner) TeardownMany(ctx context.Context, tenants []tenancy.ID) []error {
	errs := make([]error, len(tenants))
	mt, ok := r.t.(manyTarget)
	if !ok {
		for i, id := range tenants {
			errs[i] = r.Teardown(ctx, id)
		}
		return errs
	}
	ids := make([]tenancy.ID, 0, len(tenants))
	at := make([]int, 0, len(tenants))
	for i, id := range tenants {
		if errs[i] = r.checkTeardown(id); errs[i] == nil {
			ids, at = append(ids, id), append(at, i)
		}
	}
	if len(ids) == 0 {
		return errs
	}
	res := mt.TeardownMany(ctx, ids)
	for j, id := range ids {
		r.s.Gate.Forget(id)
		if errs[at[j]] = result(res, j); errs[at[j]] == nil {
			errs[at[j]] = r.forget(ctx, id)
		}
	}
	return errs
}

func (r *Runner) checkTeardown(tenant tenancy.ID) error {
	if err := CheckTeardown(r.s.AllowTeardown, tenant); err != nil {
		if tenant.IsZero() {
			return r.unbound()
		}
		return err
	}
	return nil
}

// forget removes the module's record of a torn-down tenant from the
// registry, and the tenant once no module's is left (ModuleRemover).
func (r *Runner) forget(ctx context.Context, tenant tenancy.ID) error {
	switch reg := r.s.Registry.(type) {
	case nil:
		return nil
	case ModuleRemover:
		return reg.RemoveModule(ctx, tenant, r.s.Module)
	default:
		return reg.Remove(ctx, tenant)
	}
}

// Migrate applies the pending steps to tenant's targets (the zero tenant:
// the module's shared target; a module with only a shared target
// migrates it whatever the tenant) and returns what it applied. A tenant
// brought current is recorded in the registry and let through the version
// gate.
func (r *Runner) Migrate(ctx context.Context, tenant tenancy.ID) ([]Change, error) {
	return r.migrate(ctx, tenant, false)
}

func (r *Runner) migrate(ctx context.Context, tenant tenancy.ID, dry bool) ([]Change, error) {
	if len(r.s.Set) == 0 {
		return nil, nil
	}
	switch {
	case !r.s.PerTenant:
		tenant = tenancy.ID{}
	case tenant.IsZero() && !r.s.Shared:
		return nil, r.unbound()
	}
	hs, err := r.t.Open(ctx, tenant, dry)
	if err != nil {
		return nil, err
	}
	var changes []Change
	for i, h := range hs {
		ch, err := r.run(ctx, tenant, h, dry)
		changes = append(changes, ch...)
		if err != nil {
			for _, rest := range hs[i+1:] {
				_ = rest.Close(ctx, err)
			}
			return changes, err
		}
	}
	if dry || tenant.IsZero() || r.s.Registry == nil {
		return changes, nil
	}
	if err := r.s.Registry.SetVersion(ctx, tenant, r.s.Module, r.s.Set.Latest()); err != nil {
		return changes, fmt.Errorf("%s: module %s: tenant %s migrated, registry not updated: %w", r.s.Backend, r.s.Module, tenant, err)
	}
	return changes, nil
}

// run applies one history's pending steps and closes it.
func (r *Runner) run(ctx context.Context, tenant tenancy.ID, h History, dry bool) (changes []Change, err error) {
	defer func() {
		if cerr := h.Close(ctx, err); err == nil {
			err = cerr
		}
		if err != nil && r.s.Atomic {
			changes = nil
		}
		if err == nil && !dry {
			r.s.Gate.Mark(tenant, h.Key(), r.s.Set.Latest())
		}
	}()
	applied, err := h.Applied(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: module %s: reading the migration history: %w", r.s.Backend, r.s.Module, err)
	}
	pending, err := r.s.Set.Pending(applied, r.s.Module, r.s.Backend, tenant)
	if err != nil {
		return nil, err
	}
	for _, st := range pending {
		ch := Change{Tenant: tenant, Module: r.s.Module, Version: st.Version, Name: st.Name}
		if dry {
			changes = append(changes, ch)
			continue
		}
		mine, err := h.Claim(ctx, st)
		if err != nil {
			return changes, fmt.Errorf("%s: module %s: tenant %s, migration %s: %w", r.s.Backend, r.s.Module, tenant, st.File(), err)
		}
		if !mine { // another migrator applied it meanwhile
			continue
		}
		if err := h.Apply(ctx, st); err != nil {
			return changes, r.stepError(tenant, st, err)
		}
		changes = append(changes, ch)
	}
	return changes, nil
}

// stepError names the tenant, module and file of a step's failure; a
// backend that knows the statement returns a *StepError carrying it.
func (r *Runner) stepError(tenant tenancy.ID, st Step, err error) error {
	var se *StepError
	if !errors.As(err, &se) {
		se = &StepError{Err: err}
	}
	se.Tenant, se.Module, se.Backend, se.File = tenant, r.s.Module, r.s.Backend, st.File()
	return se
}
