package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// CachedStatementSets is how many per-(tenant, route) statement sets c
// holds, for the scale tests.
func CachedStatementSets(c *Client) int { return c.stmts.len() }

// SweepOutbox runs one sweep pass of o under ctx.
func SweepOutbox(ctx context.Context, o *Outbox, retain time.Duration) (int64, error) {
	return o.sweep(ctx, retain)
}

// ForgetTenantPredicate rewrites d's statements as if their tenant
// predicate had been lost: the tenant stays their first parameter and is
// compared to nothing, so only the server's row security can keep the
// call to the tenant's rows.
func ForgetTenantPredicate[T any](d *Documents[T]) {
	st := d.static
	for _, p := range []*string{&st.get, &st.exists, &st.update, &st.delete, &st.list, &st.count} {
		*p = strings.ReplaceAll(*p, "tenant_id = $1 AND ", "$1::uuid IS NOT NULL AND ")
	}
}

// ArchiveValuesBothWays reads tenant's archived rows of every table an
// export reads, in one snapshot, both as the export does (COPY text,
// each record built in the client) and as row_to_json on the server
// gives them, each value prefixed with its table.
func ArchiveValuesBothWays(ctx context.Context, c *Client, tenant tenancy.ID) (export, server []string, err error) {
	pool, release, err := c.conn(ctx, tenant)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	tables, err := c.archiveTables(ctx, tx, tenant, nil)
	if err != nil {
		return nil, nil, err
	}
	for _, tb := range tables {
		if err := tb.copyRows(ctx, tx, tenant, func(r migrate.Record) error {
			export = append(export, tb.family+" "+string(r.Value))
			return nil
		}); err != nil {
			return nil, nil, err
		}
		rows, _ := tx.Query(ctx, tb.selectRows(), tenant.String())
		vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, nil, err
		}
		for _, v := range vals {
			server = append(server, tb.family+" "+v)
		}
	}
	return export, server, nil
}

// ImportWithInserts makes imports use jsonb_populate_recordset INSERTs
// for every table until the returned func is called.
func ImportWithInserts() (restore func()) {
	importByCopy = false
	return func() { importByCopy = true }
}
