package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Options bound and report a run over many tenants.
type Options struct {
	// Concurrency is how many tenants run at once (default 4). Each holds
	// one connection while it runs.
	Concurrency int
	// DryRun: MigrateAll lists what would change and changes nothing;
	// ProvisionAll does the same on a target that can list what it would
	// create (a ProvisionPlanner: every backend of this module) and
	// refuses it on the others (ErrNoProvisionPlan).
	DryRun bool
	// Logger receives a progress line every Every tenants and one per
	// failure (default: no logging).
	Logger *slog.Logger
	// Every is the progress interval in tenants (default 100).
	Every int
	// Progress, when set (a terminal), receives a progress line rewritten
	// in place ("\r").
	Progress io.Writer
}

// Failure is one tenant whose run failed; the others went on.
type Failure struct {
	Tenant tenancy.ID
	Err    error
}

// Change is one step applied (or, in a dry run, that would be), or, in a
// dry run of ProvisionAll, one container provisioning would create.
type Change struct {
	Tenant  tenancy.ID // zero: the shared tables
	Module  string
	Version int64
	Name    string
	// Create names what a dry run of ProvisionAll would create, as its
	// target's PlanProvision spells it (a Neo4j database or a Kafka topic
	// by name; "schema s", "table s.t", "collection db.c"... where a
	// backend creates several kinds); Version and Name are then unset.
	Create string
}

// Report is the outcome of a run.
type Report struct {
	Op       string
	Total    int
	Done     int // tenants that completed (changed or already current)
	Failures []Failure
	Changes  []Change
	Elapsed  time.Duration
	// Err says why the run was cut short (the context's error, or a failed
	// shared target before any tenant ran): the tenants not reached are
	// neither done nor failed, and a rerun picks them up.
	Err error
}

// PerSecond is the completed tenants per second.
func (r Report) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Done) / r.Elapsed.Seconds()
}

// Recorder collects a tenant's changes; it is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	changes []Change
}

// Add records changes.
func (r *Recorder) Add(c ...Change) {
	r.mu.Lock()
	r.changes = append(r.changes, c...)
	r.mu.Unlock()
}

// Each runs fn for every tenant, at most o.Concurrency at once. A tenant's
// failure is reported in the Report and does not stop the others; a
// cancelled ctx stops handing out tenants and the run returns what it
// finished. op names the run in progress lines ("migrate orders").
func Each(ctx context.Context, op string, tenants []tenancy.ID, o Options, fn func(ctx context.Context, tenant tenancy.ID, rec *Recorder) error) Report {
	return EachBatch(ctx, op, tenants, 1, o, func(ctx context.Context, batch []tenancy.ID, rec *Recorder) []error {
		return []error{fn(ctx, batch[0], rec)}
	})
}

// MigrateAll migrates the module's shared target (when it has one) and
// then every tenant's own targets (tenants, or the registry's ready
// tenants when nil), with bounded concurrency: failures are reported per
// tenant while the others go on, and a rerun after a crash continues
// where it stopped. The shared target runs alone and first, since a
// tenant's steps may build on it; when it fails no tenant runs, and the
// report's Err says so. With o.DryRun it lists what would change and
// changes nothing.
func (r *Runner) MigrateAll(ctx context.Context, tenants []tenancy.ID, o Options) (Report, error) {
	op := "migrate " + r.s.Module
	if o.DryRun {
		op += " (dry run)"
	}
	if len(r.s.Set) == 0 {
		return Report{Op: op}, nil
	}
	if r.s.PerTenant && tenants == nil {
		if r.s.Registry == nil {
			return Report{Op: op}, fmt.Errorf("%s: module %s: MigrateAll without a tenant list needs a TenantRegistry", r.s.Backend, r.s.Module)
		}
		var err error
		if tenants, err = ReadyTenants(ctx, r.s.Registry); err != nil {
			return Report{Op: op}, err
		}
	}
	if !r.s.PerTenant {
		tenants = nil
	}
	run := func(list []tenancy.ID) Report {
		return Each(ctx, op, list, o, func(ctx context.Context, t tenancy.ID, rec *Recorder) error {
			ch, err := r.migrate(ctx, t, o.DryRun)
			rec.Add(ch...)
			return err
		})
	}
	if !r.s.Shared {
		return run(tenants), nil
	}
	rep := run([]tenancy.ID{{}})
	rep.Total += len(tenants)
	if rep.Err != nil || len(rep.Failures) > 0 {
		if rep.Err == nil && len(tenants) > 0 {
			rep.Err = fmt.Errorf("%s: module %s: the shared target failed, so no tenant was migrated: %w", r.s.Backend, r.s.Module, rep.Failures[0].Err)
		}
		return rep, nil
	}
	if len(tenants) == 0 {
		return rep, nil
	}
	rest := run(tenants)
	rep.Done += rest.Done
	rep.Failures = rest.Failures
	rep.Changes = append(rep.Changes, rest.Changes...)
	rep.Elapsed += rest.Elapsed
	rep.Err = rest.Err
	return rep, nil
}

// batchProvisioner is a Target that provisions many tenants in one
// request (Kafka: a batch's topics in one admin call): ProvisionBatch
// returns one error per tenant, in order, for up to Batch tenants.
type batchProvisioner interface {
	ProvisionBatch(ctx context.Context, tenants []tenancy.ID) []error
	Batch() int
}

// ProvisionPlanner is a Target that can list, without creating anything,
// the containers its Provision would create for a tenant (those missing):
// ProvisionAll's dry run reports them.
type ProvisionPlanner interface {
	PlanProvision(ctx context.Context, tenant tenancy.ID) ([]string, error)
}

// ProvisionAll provisions tenants as Provision does, with bounded
// concurrency; a rerun after a crash completes the tenants left half
// done. With o.DryRun, on a ProvisionPlanner, it lists the containers it
// would create and the steps that would run, and changes nothing, the
// registry included (ProvisionPlan per tenant); other targets refuse a
// dry run with ErrNoProvisionPlan.
func (r *Runner) ProvisionAll(ctx context.Context, tenants []tenancy.ID, o Options) (Report, error) {
	op := "provision " + r.s.Module
	if o.DryRun {
		if _, ok := r.t.(ProvisionPlanner); !ok {
			return Report{Op: op}, r.noPlan()
		}
		return Each(ctx, op+" (dry run)", tenants, o, func(ctx context.Context, t tenancy.ID, rec *Recorder) error {
			ch, err := r.ProvisionPlan(ctx, t)
			rec.Add(ch...)
			return err
		}), nil
	}
	create := func(ctx context.Context, batch []tenancy.ID) []error {
		return []error{r.t.Provision(ctx, batch[0])}
	}
	size := 1
	if b, ok := r.t.(batchProvisioner); ok {
		create, size = b.ProvisionBatch, b.Batch()
	}
	return EachBatch(ctx, op, tenants, size, o, func(ctx context.Context, batch []tenancy.ID, _ *Recorder) []error {
		// A zero id is refused before anything is written: it must not
		// become a registry entry.
		errs := make([]error, len(batch))
		var todo []tenancy.ID
		for i, t := range batch {
			if t.IsZero() {
				errs[i] = r.unbound()
			} else if errs[i] = r.put(ctx, []tenancy.ID{t}, Provisioning)[0]; errs[i] == nil {
				todo = append(todo, t)
			}
		}
		if len(todo) == 0 {
			return errs
		}
		made := create(ctx, todo)
		for i, j := 0, 0; i < len(batch); i++ {
			if errs[i] != nil {
				continue
			}
			if errs[i] = result(made, j); errs[i] == nil {
				errs[i] = r.provisioned(ctx, batch[i])
			}
			j++
		}
		return errs
	}), nil
}

// ProvisionPlan is what Provision(ctx, tenant) would do, doing nothing
// (the registry included): the containers it would create, then the steps
// that would run on them. A target that cannot list what it would create
// (not a ProvisionPlanner) refuses it with ErrNoProvisionPlan.
func (r *Runner) ProvisionPlan(ctx context.Context, tenant tenancy.ID) ([]Change, error) {
	if tenant.IsZero() {
		return nil, r.unbound()
	}
	p, ok := r.t.(ProvisionPlanner)
	if !ok {
		return nil, r.noPlan()
	}
	names, err := p.PlanProvision(ctx, tenant)
	if err != nil {
		return nil, err
	}
	var out []Change
	for _, n := range names {
		out = append(out, Change{Tenant: tenant, Module: r.s.Module, Create: n})
	}
	ch, err := r.migrate(ctx, tenant, true)
	return append(out, ch...), err
}

// ErrNoProvisionPlan: the module's target cannot list what its Provision
// would create (it is not a ProvisionPlanner), so provisioning has no dry
// run there. Every backend of this module implements one; a third-party
// target may not. It is coded operator_request_invalid, as a dry run asked
// of an endpoint that takes none is.
var ErrNoProvisionPlan error = &tenancy.Error{Code: tenancy.CodeOperatorRequestInvalid,
	Detail: "provisioning has no dry run on this backend: its lifecycle target is not a migrate.ProvisionPlanner",
	Fix:    "provision without a dry run, or give the target a PlanProvision method that lists what Provision would create"}

func (r *Runner) noPlan() error {
	return fmt.Errorf("%s: module %s: %w", r.s.Backend, r.s.Module, ErrNoProvisionPlan)
}

// result is errs[i], or an error when a batch returned too few.
func result(errs []error, i int) error {
	if i < len(errs) {
		return errs[i]
	}
	return errors.New("migrate: the batch returned no result for this tenant")
}

// EachBatch is Each over batches of up to size tenants: fn returns one
// error per tenant, in order (nil: done).
func EachBatch(ctx context.Context, op string, tenants []tenancy.ID, size int, o Options, fn func(ctx context.Context, batch []tenancy.ID, rec *Recorder) []error) Report {
	p := newProgress(op, len(tenants), o)
	workers := o.Concurrency
	if workers <= 0 {
		workers = 4
	}
	size = max(size, 1)
	rec := &Recorder{}
	next := make(chan []tenancy.ID)
	var wg sync.WaitGroup
	for range min(workers, max((len(tenants)+size-1)/size, 1)) {
		wg.Go(func() {
			for batch := range next {
				errs := fn(ctx, batch, rec)
				p.record(batch, errs)
			}
		})
	}
feed:
	for i := 0; i < len(tenants); i += size {
		select {
		case next <- tenants[i:min(i+size, len(tenants))]:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return p.end(ctx.Err(), rec.changes)
}

// progress counts a run's tenants and reports them every o.Every.
type progress struct {
	o        Options
	every    int
	start    time.Time
	mu       sync.Mutex
	rep      Report
	finished int // tenants done or failed
}

func newProgress(op string, total int, o Options) *progress {
	every := o.Every
	if every <= 0 {
		every = 100
	}
	return &progress{o: o, every: every, start: time.Now(), rep: Report{Op: op, Total: total}}
}

// record records a batch's outcome, one error per tenant.
func (p *progress) record(batch []tenancy.ID, errs []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.finished
	p.finished += len(batch)
	for i, t := range batch {
		err := result(errs, i)
		if err == nil {
			p.rep.Done++
			continue
		}
		p.rep.Failures = append(p.rep.Failures, Failure{Tenant: t, Err: err})
		if p.o.Logger != nil {
			p.o.Logger.Error(p.rep.Op+" failed", "tenant", t.String(), "err", err)
		}
	}
	if before/p.every != p.finished/p.every {
		p.line()
	}
}

// line reports the run so far; called with mu held.
func (p *progress) line() {
	rate := float64(p.finished) / max(time.Since(p.start).Seconds(), 1e-9)
	if p.o.Logger != nil {
		p.o.Logger.Info(p.rep.Op, "done", p.rep.Done, "failed", len(p.rep.Failures), "total", p.rep.Total, "per_sec", int(rate))
	}
	if p.o.Progress != nil {
		fmt.Fprintf(p.o.Progress, "\r%s: %d/%d done, %d failed, %.0f tenants/s ", p.rep.Op, p.rep.Done, p.rep.Total, len(p.rep.Failures), rate)
	}
}

// end is the run's report, with the final progress line.
func (p *progress) end(err error, changes []Change) Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rep.Err, p.rep.Elapsed, p.rep.Changes = err, time.Since(p.start), changes
	p.line()
	if p.o.Progress != nil {
		fmt.Fprintln(p.o.Progress)
	}
	return p.rep
}
