package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenantwire/tenantwire/tenancy"
)

// appliedVersion is the newest version applied to tenant's target (0 when
// nothing was).
func (c *Client) appliedVersion(ctx context.Context, pool querier, tenant tenancy.ID) (int64, error) {
	table := pgx.Identifier{c.target(tenant), migrationTable}.Sanitize()
	var v int64
	err := pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+table+" WHERE module = $1", c.module).Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") { // no table, no schema
		return 0, nil
	}
	return v, err
}

// ensureCurrent refuses a call for a tenant whose target is behind the
// required version. A tenant found current is remembered, so the check
// costs a round trip once per tenant, not per call.
func (c *Client) ensureCurrent(ctx context.Context, tenant tenancy.ID, pool querier, route string) error {
	l := c.life
	if l == nil || l.gate == nil {
		return nil
	}
	if l.shared {
		tenant = tenancy.ID{}
	} else if tenant.IsZero() {
		return nil // a tenant-global call (an unbound relay's outbox) touches no tenant's schema
	}
	return l.gate.Check(ctx, tenant, "", route, func(ctx context.Context) (int64, error) {
		v, err := c.appliedVersion(ctx, pool, tenant)
		if err == nil && v == 0 && !tenant.IsZero() {
			// Behind from version 0 is "never provisioned" when the
			// tenant's schema is not there at all: say what to call.
			var exists bool
			if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)", c.target(tenant)).Scan(&exists); err != nil {
				return 0, err
			}
			if !exists {
				return 0, &tenancy.Error{
					Code: tenancy.CodeTenantNotProvisioned, Module: c.module, Backend: rules.Name, Route: route,
					Detail: fmt.Sprintf("tenant %s has no schema %s: it was never provisioned, or was torn down; nothing was read or written", tenant, c.target(tenant)),
					Fix:    "call Provision(ctx, tenant) on the module's *postgres.Client (or Tenants.Provision) before the tenant's first call; it also migrates the tenant to the current version",
				}
			}
		}
		return v, err
	})
}

// checkVersions refuses to start while the shared tables or any registered
// tenant are behind the required version.
func (c *Client) checkVersions(ctx context.Context) error {
	l := c.life
	if l.shared {
		pool, release, err := c.conn(ctx, tenancy.ID{})
		if err != nil {
			return err
		}
		defer release()
		return c.ensureCurrent(ctx, tenancy.ID{}, pool, "")
	}
	return l.gate.CheckRegistry(ctx, l.registry)
}
