package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// MigrateAll migrates every tenant (tenants, or the registry's ready
// tenants when nil) with bounded concurrency: each tenant in its own
// transaction and lock, failures reported per tenant while the others go
// on, progress logged. A rerun after a crash continues where it stopped.
// A module whose target is shared migrates it once.
func (c *Client) MigrateAll(ctx context.Context, tenants []tenancy.ID, o migrate.Options) (migrate.Report, error) {
	op := "migrate " + c.module
	if c.life == nil || len(c.life.set) == 0 {
		return migrate.Report{Op: op}, nil
	}
	if c.life.shared {
		tenants = []tenancy.ID{{}}
	} else if tenants == nil {
		if c.life.registry == nil {
			return migrate.Report{Op: op}, fmt.Errorf("postgres: module %s: MigrateAll without a tenant list needs a TenantRegistry", c.module)
		}
		var err error
		if tenants, err = migrate.ReadyTenants(ctx, c.life.registry); err != nil {
			return migrate.Report{Op: op}, err
		}
	}
	if o.DryRun {
		op += " (dry run)"
	}
	return migrate.Each(ctx, op, tenants, o, func(ctx context.Context, t tenancy.ID, rec *migrate.Recorder) error {
		ch, err := c.migrateTenant(ctx, t, o.DryRun)
		rec.Add(ch...)
		return err
	}), nil
}

// ProvisionAll provisions tenants with bounded concurrency, recording each
// in the registry; it is idempotent, so a rerun after a crash completes
// the tenants left half done. DryRun is not supported.
func (c *Client) ProvisionAll(ctx context.Context, tenants []tenancy.ID, o migrate.Options) (migrate.Report, error) {
	if o.DryRun {
		return migrate.Report{}, errors.New("postgres: ProvisionAll has no dry run")
	}
	return migrate.Each(ctx, "provision "+c.module, tenants, o, func(ctx context.Context, t tenancy.ID, _ *migrate.Recorder) error {
		return c.Provision(ctx, t)
	}), nil
}

// provisioned runs after a tenant's DDL: its migrations, then its registry
// entry.
func (c *Client) provisioned(ctx context.Context, tenant tenancy.ID) error {
	if _, err := c.migrateTenant(ctx, tenant, false); err != nil {
		return err
	}
	if r := c.registry(); r != nil {
		return r.Put(ctx, tenant, migrate.Ready)
	}
	return nil
}
