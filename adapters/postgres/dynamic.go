package postgres

import (
	"context"
	"reflect"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/tenancy"
)

// DynamicReadConfig wires a dynamic read: SQL text compiled per request by
// a trusted compiler (origin compiled, which needs namespace or better).
type DynamicReadConfig struct {
	// PerTenantSchema: the compiler targets the bound tenant's schema
	// (namespace). Without it only a routed client clears the origin floor.
	PerTenantSchema bool
	// TenantRole runs each read under the tenant's own role (SET LOCAL
	// ROLE inside its transaction); the role has usage on the tenant's
	// schema only, so compiled text that names another tenant's schema is
	// refused by the server. Required unless the client is routed.
	TenantRole bool
}

// DynamicRead adds a dynamic-read route and provides *DynamicReads.
func DynamicRead(name string, dc DynamicReadConfig) Option {
	return func(c *config) {
		spec := &routeSpec{name: name, kind: KindDynamicRead, origin: tenancy.Compiled, tenantRole: dc.TenantRole,
			typ:  reflect.TypeFor[*DynamicReads](),
			rels: []roleRel{{"schema", Relation{table: "(tenant schema)", perTenant: dc.PerTenantSchema}}}}
		spec.provide = provideRoute(func(cl *Client) *DynamicReads {
			return &DynamicReads{route: route{cl, spec}, cfg: dc}
		})
		c.routes = append(c.routes, spec)
	}
}

// DynamicReads runs compiled read-only SQL for the bound tenant.
type DynamicReads struct {
	route
	cfg DynamicReadConfig
}

// Schema is the bound tenant's quoted schema name, for the compiler.
func (d *DynamicReads) Schema(ctx context.Context) (string, error) {
	tenant, err := tenancy.Require(ctx)
	if err != nil {
		return "", err
	}
	return pgx.Identifier{SchemaName(d.c.prefix, tenant)}.Sanitize(), nil
}

// Query runs text in a read-only transaction, under the tenant's role when
// configured, and hands the rows to scan before committing.
func (d *DynamicReads) Query(ctx context.Context, text string, args []any, scan func(pgx.Rows) error) error {
	tenant, err := tenancy.Require(ctx)
	if err != nil {
		return err
	}
	pool, release, err := d.c.conn(ctx, tenant)
	if err != nil {
		return err
	}
	defer release()
	return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if d.cfg.TenantRole {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+pgx.Identifier{RoleName(d.c.prefix, tenant)}.Sanitize()); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, text, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	})
}
