package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// stagingSuffix ends a forward import's staging schema. It ends in a
// letter no hex digit is, so the name is no tenant's schema under any
// prefix, and it keeps the name within the role suffix's length.
const stagingSuffix = "_in"

// ImportsForward: the module's migrations run in each tenant's own
// schema, or in the static schema of its own database (a routed client),
// where a staging copy of it can be built at any version.
func (t lifecycleTarget) ImportsForward() bool { return t.c.life.perTenantSchema || t.c.routed != nil }

// ImportForward imports an archive exported at an older migration
// version, in one transaction: in a staging schema it applies the steps
// up to the archive's version, writes the records there, applies the
// steps after it, then moves every row into the tenant's own tables (at
// the app's version, empty) and drops the staging schema. The staging
// schema is what Provision makes of the tenant's home schema at that
// version: the routes' tables, then the steps. Other rows (tagged, and a
// routed tenant's static tables beside its schema) go straight to their
// tables, which the migrations do not touch.
// Interrupted or failed anywhere, it leaves nothing: no staging schema
// is ever committed, and a rerun starts again.
func (t lifecycleTarget) ImportForward(ctx context.Context, tenant tenancy.ID, in migrate.ArchiveIn, before, after migrate.Set) error {
	c := t.c
	return t.importTx(ctx, tenant, func(tx pgx.Tx, tables []pgTable) error {
		stage := SchemaName(c.prefix, tenant) + stagingSuffix
		qstage := pgx.Identifier{stage}.Sanitize()
		if _, err := tx.Exec(ctx, "CREATE SCHEMA "+qstage); err != nil {
			return fmt.Errorf("postgres: creating the staging schema %s: %w", qstage, err)
		}
		if _, err := tx.Exec(ctx, "SELECT pg_catalog.set_config('search_path', $1, true)", qstage); err != nil {
			return err
		}
		for _, q := range c.stagingDDL(tenant, qstage) {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("postgres: creating the routes' tables in %s: %w", qstage, err)
			}
		}
		if err := c.applySteps(ctx, tx, tenant, before); err != nil {
			return err
		}
		staged, err := c.archiveTablesIn(ctx, tx, tenant, stage, nil)
		if err != nil {
			return err
		}
		// The steps' own rows (a seeded default) are in the archive as
		// the tenant had them at that version, or were deleted since.
		var own []string
		for _, tb := range staged {
			if tb.home {
				own = append(own, tb.q)
			}
		}
		if len(own) > 0 {
			if _, err := tx.Exec(ctx, "TRUNCATE "+strings.Join(own, ", ")); err != nil {
				return err
			}
		}
		if err := c.importRecords(ctx, tx, tenant, in, staged); err != nil {
			return err
		}
		if err := c.applySteps(ctx, tx, tenant, after); err != nil {
			return err
		}
		for _, tb := range tables {
			if tb.home {
				if err := tb.moveFrom(ctx, tx, qstage); err != nil {
					return err
				}
			}
		}
		if _, err := tx.Exec(ctx, "DROP SCHEMA "+qstage+" CASCADE"); err != nil {
			return err
		}
		return resetSequences(ctx, tx, tables)
	})
}

// stagingDDL is the routes' statements that create the tables of
// tenant's home schema (where the migrations run), as Provision runs them
// before the migrations, made in the staging schema instead: the home's
// quoted name, which qualifies every one of its tables (ident), is the
// staging schema's. Statements on other tables are left out.
func (c *Client) stagingDDL(tenant tenancy.ID, qstage string) []string {
	own := pgx.Identifier{c.target(tenant)}.Sanitize() + "."
	var out []string
	for _, r := range c.routes {
		if r.ddl == nil {
			continue
		}
		for _, q := range r.ddl(c, tenant) {
			if strings.Contains(q, own) {
				out = append(out, strings.ReplaceAll(q, own, qstage+"."))
			}
		}
	}
	return out
}

// applySteps runs steps, each file whole, in the transaction's
// search_path.
func (c *Client) applySteps(ctx context.Context, tx pgx.Tx, tenant tenancy.ID, steps migrate.Set) error {
	for _, st := range steps {
		if res, err := tx.Conn().PgConn().Exec(ctx, string(st.Body)).ReadAll(); err != nil {
			return &migrate.StepError{Tenant: tenant, Module: c.module, Backend: rules.Name, File: st.File(),
				Statement: failedStatement(string(st.Body), res), Err: fmt.Errorf("migrating the archive's records forward: %w", err)}
		}
	}
	return nil
}

// moveFrom copies every row of the staging schema's table of tb's name
// into tb, column by column name, keeping the generated keys the archive
// holds.
func (tb pgTable) moveFrom(ctx context.Context, tx pgx.Tx, qstage string) error {
	cols := make([]string, 0, len(tb.cols))
	identity := false
	for _, c := range tb.cols {
		cols = append(cols, pgx.Identifier{c.name}.Sanitize())
		identity = identity || c.serial
	}
	list := strings.Join(cols, ", ")
	q := "INSERT INTO " + tb.q + " (" + list + ")"
	if identity {
		q += " OVERRIDING SYSTEM VALUE"
	}
	q += " SELECT " + list + " FROM " + qstage + "." + pgx.Identifier{tb.family}.Sanitize()
	// A key the archive leaves out (an outbox's row number) is numbered
	// afresh, in the staged rows' order.
	q += tb.keyOrder("")
	if _, err := tx.Exec(ctx, q); err != nil {
		return fmt.Errorf("postgres: moving the migrated records into %s: %w", tb.q, err)
	}
	return nil
}
