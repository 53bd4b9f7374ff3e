package modules

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// ProvisionAll runs Provision for every one of tenants, at most
// o.Concurrency at once (default 4): a tenant's failure is in the report
// and the others go on; a cancelled ctx stops handing out tenants. Every
// module's provisioning is idempotent, so a rerun over the same list
// completes an interrupted run. With o.DryRun it changes nothing (no
// container, step, registry entry or suspension) and reports, in
// Changes, what each module's provisioning would create and the steps
// that would run; a module that creates nothing ahead of a tenant's first
// call (Redis, memory) adds nothing, and one that cannot say fails the
// tenant rather than provision it.
func (t *Tenants) ProvisionAll(ctx context.Context, tenants []tenancy.ID, o migrate.Options) migrate.Report {
	if o.DryRun {
		return migrate.Each(ctx, "provision (dry run)", tenants, o, t.plan)
	}
	return migrate.Each(ctx, "provision", tenants, o, func(ctx context.Context, id tenancy.ID, _ *migrate.Recorder) error {
		_, err := t.Provision(ctx, id)
		return err
	})
}

// plan records what Provision would do for id in every module.
func (t *Tenants) plan(ctx context.Context, id tenancy.ID, rec *migrate.Recorder) error {
	if id.IsZero() {
		return tenancy.Unbound()
	}
	var errs []error
	for _, s := range t.states {
		if s.Provision == nil || !t.holds(s, id) {
			continue // nothing to create, or placed elsewhere
		}
		if s.Plan == nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", s.Module, s.Backend, migrate.ErrNoProvisionPlan))
			continue
		}
		ch, err := s.Plan(ctx, id)
		rec.Add(ch...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", s.Module, s.Backend, err))
		}
	}
	return errors.Join(errs...)
}

// OffboardAll suspends every one of tenants at once (one swap of the
// suspended set), waits for their calls in flight as Offboard does (a
// timeout fails every tenant and removes nothing), then removes their data, batches of tenants at most
// o.Concurrency at once: a module that removes many tenants in one pass
// (OffboardMany) gets each batch whole, the others each tenant in turn.
// A tenant's failure is in the report and the others go on. The tenants
// stay suspended; a rerun completes an interrupted run.
func (t *Tenants) OffboardAll(ctx context.Context, tenants []tenancy.ID, o migrate.Options) migrate.Report {
	return t.OffboardAllWith(ctx, tenants, o, OffboardOptions{})
}

// OffboardAllWith is OffboardAll with oo. With oo.RecordSuspended, every
// tenant's suspension is written to the store after the local one and
// before anything of any tenant is removed, so a process started after a
// crash mid-run serves none of them; a tenant whose write fails fails
// with nothing of it removed, and the others go on.
func (t *Tenants) OffboardAllWith(ctx context.Context, tenants []tenancy.ID, o migrate.Options, oo OffboardOptions) migrate.Report {
	// A zero id is left to the batch, which reports it unbound.
	live := slices.DeleteFunc(slices.Clone(tenants), tenancy.ID.IsZero)
	t.SuspendAll(live)
	var recorded time.Time
	var unrecorded []migrate.Failure
	if oo.RecordSuspended != nil {
		kept, failed := live[:0], map[tenancy.ID]bool{}
		for _, id := range live {
			if err := oo.record(ctx, id); err != nil {
				unrecorded = append(unrecorded, migrate.Failure{Tenant: id, Err: err})
				failed[id] = true
				continue
			}
			kept = append(kept, id)
		}
		live, recorded = kept, time.Now()
		if len(failed) > 0 {
			tenants = slices.DeleteFunc(slices.Clone(tenants), func(id tenancy.ID) bool { return failed[id] })
		}
	}
	err := t.awaitReplicasSince(ctx, recorded, live...)
	if err == nil {
		err = t.Drain(ctx, live...)
	}
	if err != nil {
		// Nothing is removed: every tenant fails with the timeout.
		rep := migrate.Report{Op: "offboard", Total: len(tenants) + len(unrecorded), Failures: unrecorded}
		for _, id := range tenants {
			rep.Failures = append(rep.Failures, migrate.Failure{Tenant: id, Err: err})
		}
		return rep
	}
	rep := t.offboardBatches(ctx, tenants, o)
	failed := make(map[tenancy.ID]bool, len(rep.Failures))
	for _, f := range rep.Failures {
		failed[f.Tenant] = true
	}
	for _, id := range live {
		if !failed[id] {
			t.forgetCopies(id)
		}
	}
	rep.Total += len(unrecorded)
	rep.Failures = append(unrecorded, rep.Failures...)
	return rep
}

// offboardBatches removes tenants, suspended and drained, in batches.
func (t *Tenants) offboardBatches(ctx context.Context, tenants []tenancy.ID, o migrate.Options) migrate.Report {
	workers := o.Concurrency
	if workers <= 0 {
		workers = 4
	}
	// At most maxOffboardBatch tenants a batch, and enough batches to keep
	// every worker busy.
	size := min(maxOffboardBatch, max(1, (len(tenants)+workers-1)/workers))
	return migrate.EachBatch(ctx, "offboard", tenants, size, o, func(ctx context.Context, batch []tenancy.ID, _ *migrate.Recorder) []error {
		errs := make([][]error, len(batch))
		ids := make([]tenancy.ID, 0, len(batch))
		at := make([]int, 0, len(batch))
		for i, id := range batch {
			if id.IsZero() {
				errs[i] = append(errs[i], tenancy.Unbound())
				continue
			}
			ids, at = append(ids, id), append(at, i)
		}
		for _, s := range t.states {
			if s.Offboard == nil || len(ids) == 0 {
				continue
			}
			ids, at := ids, at
			if s.Placement != nil {
				ids, at = t.mayHoldOf(s, ids, at)
			}
			var res []error
			if len(ids) == 0 {
				continue
			}
			if s.OffboardMany != nil {
				res = s.OffboardMany(ctx, ids)
			} else {
				res = make([]error, len(ids))
				for j, id := range ids {
					res[j] = s.Offboard(ctx, id)
				}
			}
			for j := range ids {
				var err error
				if j < len(res) {
					err = res[j]
				} else {
					err = errors.New("no result for the tenant")
				}
				if err != nil {
					errs[at[j]] = append(errs[at[j]], fmt.Errorf("%s (%s): %w", s.Module, s.Backend, err))
				}
			}
		}
		out := make([]error, len(batch))
		for i := range batch {
			out[i] = errors.Join(errs[i]...)
		}
		return out
	})
}

// maxOffboardBatch bounds the tenants one OffboardMany call serves.
const maxOffboardBatch = 500
