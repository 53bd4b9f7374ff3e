package postgres

import (
	"context"
	"errors"

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
	if errors.As(err, &pe) && (pe.Code == stateUndefinedTable || pe.Code == stateInvalidSchemaName) { // no table, no schema
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
	return l.gate.CheckTenant(ctx, tenant, "", route, func(ctx context.Context) (int64, error) {
		return c.appliedVersion(ctx, pool, tenant)
	}, func(ctx context.Context) (string, error) {
		var exists bool
		err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)", c.target(tenant)).Scan(&exists)
		if err != nil || exists {
			return "", err
		}
		return "schema " + c.target(tenant), nil
	})
}

// sharedCurrent refuses while the shared tables, when the module has
// them, are behind.
func (c *Client) sharedCurrent(ctx context.Context) error {
	if !c.life.shared {
		return nil
	}
	pool, release, err := c.conn(ctx, tenancy.ID{})
	if err != nil {
		return err
	}
	defer release()
	return c.ensureCurrent(ctx, tenancy.ID{}, pool, "")
}
