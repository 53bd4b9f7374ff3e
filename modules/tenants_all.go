package modules

import (
	"context"
	"slices"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// ProvisionAll runs Provision for every one of tenants, at most
// o.Concurrency at once (default 4): a tenant's failure is in the report
// and the others go on; a cancelled ctx stops handing out tenants. Every
// module's provisioning is idempotent, so a rerun over the same list
// completes an interrupted run.
func (t *Tenants) ProvisionAll(ctx context.Context, tenants []tenancy.ID, o migrate.Options) migrate.Report {
	return migrate.Each(ctx, "provision", tenants, o, func(ctx context.Context, id tenancy.ID, _ *migrate.Recorder) error {
		_, err := t.Provision(ctx, id)
		return err
	})
}

// OffboardAll suspends every one of tenants at once (one swap of the
// suspended set), then runs Offboard for each, at most o.Concurrency at
// once. The tenants stay suspended; a rerun completes an interrupted run.
func (t *Tenants) OffboardAll(ctx context.Context, tenants []tenancy.ID, o migrate.Options) migrate.Report {
	// A zero id is left to Offboard, which reports it unbound.
	t.SuspendAll(slices.DeleteFunc(slices.Clone(tenants), tenancy.ID.IsZero))
	return migrate.Each(ctx, "offboard", tenants, o, func(ctx context.Context, id tenancy.ID, _ *migrate.Recorder) error {
		_, err := t.Offboard(ctx, id)
		return err
	})
}
