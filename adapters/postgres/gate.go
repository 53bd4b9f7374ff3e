package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/ownership"
	"github.com/tenantwire/tenantwire/tenancy"
)

// OwnershipConfig names where an id's owner is recorded.
type OwnershipConfig struct {
	// Table holds the ids: tagged (a tenant_id column) when TenantAware,
	// or a per-tenant table whose rows are all the tenant's.
	Table       Relation
	TenantAware bool
	// IDColumn defaults to "id".
	IDColumn string
	// MaxEntries bounds the positive cache (default 10,000).
	MaxEntries int
}

// Ownership returns an ownership gate over a PostgreSQL lookup. With no
// tenant cut at all (not tenant-aware, static table, plain client) tenancy
// is off for that table and the gate allows everything.
func (c *Client) Ownership(oc OwnershipConfig) *ownership.Gate {
	col := oc.IDColumn
	if col == "" {
		col = "id"
	}
	s := sql{oc.TenantAware}
	colID := pgx.Identifier{col}.Sanitize()
	lookup := func(ctx context.Context, tenant tenancy.ID, id string) (bool, error) {
		pool, release, err := c.conn(ctx, tenant)
		if err != nil {
			return false, err
		}
		defer release()
		stmt := "SELECT EXISTS (SELECT 1 FROM " + oc.Table.ident(c.prefix, c.static, tenant).Sanitize() +
			" WHERE " + s.where() + colID + " = " + s.p(1) + ")"
		var owned bool
		err = pool.QueryRow(ctx, stmt, args(s.tagged, tenant, id)...).Scan(&owned)
		return owned, err
	}
	return ownership.New(ownership.Config{
		Lookup:     lookup,
		MaxEntries: oc.MaxEntries,
		TenancyOff: !oc.TenantAware && !oc.Table.perTenant && c.routed == nil,
	})
}
