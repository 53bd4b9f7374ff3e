package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// schemaRoute is an archived row's Route for a table of the tenant's
// schema that no route declares (one a migration made).
const schemaRoute = "(schema)"

// pgTable is one table whose rows of a tenant an archive holds: every
// table of the tenant's schema but the migration history, and the tagged
// tables the module's routes write (the inventory's families). Its rows
// are archived without their tenant column.
type pgTable struct {
	route, family string // family: the table's name
	q             string // schema-qualified, quoted
	perTenant     bool   // the tenant's own table, in its schema or its own database
	home          bool   // in the schema the migrations run in, which a forward import stages
	cols          []pgColumn
	pk            []string
	tenantCol     bool
}

type pgColumn struct {
	name   string
	serial bool // a sequence or identity default: reassigned in a shared table
	kind   copyKind
	typ    int64 // the type's oid
}

// archiveTables lists tenant's tables as the server has them, in a stable
// order: the tenant's schema's tables by name, then the tagged ones in
// route order. out, when set, is told the routes' tiers and which routes
// are tenant-global (skipped).
func (c *Client) archiveTables(ctx context.Context, tx pgx.Tx, tenant tenancy.ID, out migrate.ArchiveOut) ([]pgTable, error) {
	return c.archiveTablesIn(ctx, tx, tenant, "", out)
}

// archiveTablesIn is archiveTables with the tables of the tenant's home
// schema (where the migrations run: c.target) read from staging instead,
// a forward import's staging schema, when it is set.
func (c *Client) archiveTablesIn(ctx context.Context, tx pgx.Tx, tenant tenancy.ID, staging string, out migrate.ArchiveOut) ([]pgTable, error) {
	declared := map[string]string{} // per-tenant table name -> route
	ownStatic := c.staticTables()
	var tagged []pgTable
	seen := map[string]bool{}
	for _, r := range c.routes {
		if out != nil {
			out.Tier(r.name, r.decision.Reached)
		}
		if r.ddl == nil {
			continue
		}
		global := true
		for _, rr := range r.rels {
			if !slices.Contains(ownedRoles, rr.role) {
				continue
			}
			switch {
			case r.decision.ResolvesPerTenant(rr.role):
				global = false
				if _, ok := declared[rr.rel.Base()]; !ok {
					declared[rr.rel.Base()] = r.name
				}
			case c.routed != nil && !r.decision.Global:
				global = false // the static schema of the tenant's own database
			case r.decision.Tagged:
				global = false
				q := route{c, r}.qualified(rr.rel, tenant)
				if !seen[q] {
					seen[q] = true
					tagged = append(tagged, pgTable{route: r.name, family: rr.rel.Base(), q: q})
				}
			}
		}
		if global && out != nil {
			out.Skip(r.name, "tenant-global: its rows are no tenant's")
		}
	}
	var out2 []pgTable
	own := func(schema string, declared map[string]string) error {
		home := schema == c.target(tenant)
		if home && staging != "" {
			schema = staging
		}
		more, err := ownTables(ctx, tx, tenant, schema, declared, home)
		out2 = append(out2, more...)
		return err
	}
	if c.ownsSchema() {
		if err := own(SchemaName(c.prefix, tenant), declared); err != nil {
			return nil, err
		}
	}
	if c.routed != nil {
		// A routed tenant's database is its own: the module's tables of the
		// static schema there are its data, as its schema's are.
		n := len(out2)
		if err := own(c.static, ownStatic); err != nil {
			return nil, err
		}
		if !c.ownsStatic() {
			kept := out2[:n]
			for _, tb := range out2[n:] {
				if _, declared := ownStatic[tb.family]; declared {
					kept = append(kept, tb)
				}
			}
			out2 = kept
		}
	}
	for _, tb := range tagged {
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT pg_catalog.to_regclass($1) IS NOT NULL", tb.q).Scan(&exists); err != nil {
			return nil, err
		}
		if exists {
			out2 = append(out2, tb)
		}
	}
	for i := range out2 {
		if err := out2[i].describe(ctx, tx); err != nil {
			return nil, err
		}
		if c.routeKind(out2[i].route) == kindOutbox {
			out2[i].leaveOut(outboxRowID)
		}
	}
	return out2, nil
}

// ownTables lists the tables of schema, the tenant's own (but the
// migration history, the owner record and an extension's), each of the
// route declared names for it.
func ownTables(ctx context.Context, tx pgx.Tx, tenant tenancy.ID, schema string, declared map[string]string, home bool) ([]pgTable, error) {
	rows, _ := tx.Query(ctx, `SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> $2 AND NOT pg_catalog.starts_with(c.relname, $3) AND NOT EXISTS (`+extensionMember+`) ORDER BY c.relname`, schema, migrationTable, ownerPrefix)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: listing tenant %s's tables: %w", tenant, err)
	}
	out := make([]pgTable, 0, len(names))
	for _, n := range names {
		r, ok := declared[n]
		if !ok {
			r = schemaRoute
		}
		out = append(out, pgTable{route: r, family: n, q: pgx.Identifier{schema, n}.Sanitize(), perTenant: true, home: home})
	}
	return out, nil
}

// extensionMember, in a query over pg_class c, finds that c belongs to
// an extension (PostGIS's spatial_ref_sys): the extension's, not data.
const extensionMember = `SELECT FROM pg_catalog.pg_depend d WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid AND d.deptype = 'e'`

// outboxRowID is an outbox table's row number: the claim's order, not the
// tenant's data. The archive leaves it out and an import numbers the rows
// afresh in the archive's order (key order), so a copy into a shared
// table, whose sequence another tenant's rows share, holds the same
// records as its source.
const outboxRowID = "id"

// leaveOut drops col from the columns an archive holds of tb; an
// archive's record that has it (one written before) has it ignored.
func (tb *pgTable) leaveOut(col string) {
	tb.cols = slices.DeleteFunc(tb.cols, func(c pgColumn) bool { return c.name == col })
}

// keyOrder is " ORDER BY" tb's primary key, its columns prefixed by
// alias; "" for a table without one.
func (tb pgTable) keyOrder(alias string) string {
	if len(tb.pk) == 0 {
		return ""
	}
	cols := make([]string, len(tb.pk))
	for i, c := range tb.pk {
		cols[i] = alias + pgx.Identifier{c}.Sanitize()
	}
	return " ORDER BY " + strings.Join(cols, ", ")
}

// routeKind is the kind of the module's route name; "" for none.
func (c *Client) routeKind(name string) floors.Kind {
	for _, r := range c.routes {
		if r.name == name {
			return r.kind
		}
	}
	return ""
}

// describe reads the table's columns and primary key from the catalog.
func (tb *pgTable) describe(ctx context.Context, tx pgx.Tx) error {
	rows, _ := tx.Query(ctx, `SELECT a.attname, a.attidentity <> '' OR COALESCE(pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%', false), a.atttypid::int8
		FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' ORDER BY a.attnum`, tb.q)
	var err error
	tb.cols, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgColumn, error) {
		var c pgColumn
		var typ int64
		err := r.Scan(&c.name, &c.serial, &typ)
		c.kind, c.typ = copyKindOf(typ), typ
		return c, err
	})
	if err != nil {
		return fmt.Errorf("postgres: describing %s: %w", tb.q, err)
	}
	for _, c := range tb.cols {
		tb.tenantCol = tb.tenantCol || c.name == "tenant_id"
	}
	rows, _ = tx.Query(ctx, `SELECT a.attname FROM pg_catalog.pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k(n, o)
		JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n
		WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY k.o`, tb.q)
	if tb.pk, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return fmt.Errorf("postgres: describing %s: %w", tb.q, err)
	}
	return nil
}

// selectRows is tb's rows for $1, the tenant, as an archive's records
// are: row_to_json of every column but the tenant's, in primary-key
// order. The export builds the same text in the client from COPY
// (copyRows); the import's emptiness check asks for one row of it.
func (tb pgTable) selectRows() string {
	var cols []string
	for _, c := range tb.cols {
		if c.name != "tenant_id" {
			cols = append(cols, "t."+pgx.Identifier{c.name}.Sanitize())
		}
	}
	q := "SELECT pg_catalog.row_to_json(x)::text FROM (SELECT " + strings.Join(cols, ", ") + " FROM " + tb.q + " t"
	if tb.tenantCol {
		q += " WHERE t.tenant_id = $1"
	} else {
		q += " WHERE $1::uuid IS NOT NULL"
	}
	q += tb.keyOrder("t.")
	return q + ") x"
}

// Export reads tenant's rows of every table of archiveTables in one
// REPEATABLE READ READ ONLY transaction: one snapshot of the module's
// database, while the tenant keeps being served.
func (t lifecycleTarget) Export(ctx context.Context, tenant tenancy.ID, out migrate.ArchiveOut) error {
	c := t.c
	if err := c.ownerSeesEveryRow(ctx, tenant); err != nil {
		return err
	}
	pool, release, err := c.conn(ctx, tenant)
	if err != nil {
		return err
	}
	defer release()
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := c.checkOwner(ctx, tx, tenant); err != nil {
		return err
	}
	out.Snapshot("one REPEATABLE READ READ ONLY transaction: a consistent snapshot of the module's tables")
	tables, err := c.archiveTables(ctx, tx, tenant, out)
	if err != nil {
		return err
	}
	for _, tb := range tables {
		if err := tb.copyRows(ctx, tx, tenant, out.Emit); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// importByCopy: tables whose columns COPY FROM can take are imported
// with it (the tests turn it off to compare with the INSERTs).
var importByCopy = true

// importBatch bounds the rows one INSERT carries.
const importBatch = 1000

// Import writes an archive's rows into tenant in one transaction holding
// the tenant's import lock: it refuses a tenant with a row in any of its
// tables, binds every row to tenant (the archive's tenant column, if an
// edit put one there, is ignored) and names only tables archiveTables
// lists for tenant. Interrupted, it leaves nothing, and a rerun
// completes it.
func (t lifecycleTarget) Import(ctx context.Context, tenant tenancy.ID, in migrate.ArchiveIn) error {
	return t.importTx(ctx, tenant, func(tx pgx.Tx, tables []pgTable) error {
		if err := t.c.importRecords(ctx, tx, tenant, in, tables); err != nil {
			return err
		}
		return resetSequences(ctx, tx, tables)
	})
}

// importTx runs fill in one transaction on tenant's connection, holding
// the tenant's import lock, once it found every table of the tenant
// empty.
func (t lifecycleTarget) importTx(ctx context.Context, tenant tenancy.ID, fill func(tx pgx.Tx, tables []pgTable) error) error {
	c := t.c
	pool, release, err := c.conn(ctx, tenant)
	if err != nil {
		return err
	}
	defer release()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended($1, 0))", "tenantwire.import."+c.prefix+"."+tenant.Hex()); err != nil {
			return err
		}
		if err := c.checkOwner(ctx, tx, tenant); err != nil {
			return err
		}
		tables, err := c.archiveTables(ctx, tx, tenant, nil)
		if err != nil {
			return err
		}
		for _, tb := range tables {
			var held bool
			if err := tx.QueryRow(ctx, "SELECT EXISTS ("+tb.selectRows()+" LIMIT 1)", tenant.String()).Scan(&held); err != nil {
				return err
			}
			if held {
				return migrate.ArchiveTargetNotEmpty(c.module, rules.Name, tenant, tb.q)
			}
		}
		return fill(tx, tables)
	})
}

// importRecords writes in's rows into tables, each record into the table
// of its (route, family): a refused record, or none such, fails the
// whole.
func (c *Client) importRecords(ctx context.Context, tx pgx.Tx, tenant tenancy.ID, in migrate.ArchiveIn, tables []pgTable) error {
	byName := map[[2]string]pgTable{}
	for _, tb := range tables {
		byName[[2]string{tb.route, tb.family}] = tb
	}
	var cur *pgTable
	var batch []json.RawMessage
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := cur.insert(ctx, tx, tenant, batch)
		batch = batch[:0]
		return err
	}
	var next *migrate.Record // a record read ahead, by a COPY that ended at it
	for {
		var r migrate.Record
		if next != nil {
			r, next = *next, nil
		} else {
			var ok bool
			var err error
			if r, ok, err = in.Next(); err != nil {
				return err
			} else if !ok {
				break
			}
		}
		tb, found := byName[[2]string{r.Route, r.Family}]
		if !found || r.Kind != "row" || !json.Valid(r.Value) {
			return migrate.ArchiveMismatch(c.module, rules.Name, r.Route, fmt.Sprintf("a %s record of family %q: tenant %s has no such table of the route", r.Kind, r.Family, tenant),
				"provision the target tenant first, and import an unaltered archive into an app with the archive's routes at its migration version")
		}
		if cur == nil || cur.q != tb.q || len(batch) == importBatch {
			if err := flush(); err != nil {
				return err
			}
			cur = &tb
		}
		if ci, ok := tb.copyInOf(); ok && importByCopy {
			// The table's whole section in one COPY FROM: the
			// records are turned into COPY's text as it reads them.
			src, err := newCopyInRows(c.module, tb, ci, tenant, in, r)
			if err != nil {
				return err
			}
			_, err = tx.Conn().PgConn().CopyFrom(ctx, src, ci.sql)
			ended, srcErr := src.result()
			if srcErr != nil {
				return srcErr // the archive's error or a refusal: COPY was failed with it
			}
			if err != nil {
				return fmt.Errorf("postgres: importing into %s: %w", tb.q, err)
			}
			next = ended
			continue
		}
		batch = append(batch, r.Value)
	}
	return flush()
}

// insert writes rows into tb for tenant: the tenant column is tenant's,
// and a shared table's sequence columns take the table's next values
// (another tenant's rows hold the archived ones).
func (tb pgTable) insert(ctx context.Context, tx pgx.Tx, tenant tenancy.ID, rows []json.RawMessage) error {
	var into, from []string
	identity := false
	for _, c := range tb.cols {
		id := pgx.Identifier{c.name}.Sanitize()
		switch {
		case c.name == "tenant_id":
			into, from = append(into, id), append(from, "$2::uuid")
		case c.serial && !tb.perTenant:
		default:
			into, from = append(into, id), append(from, "r."+id)
			identity = identity || c.serial
		}
	}
	q := "INSERT INTO " + tb.q + " (" + strings.Join(into, ", ") + ")"
	if identity {
		q += " OVERRIDING SYSTEM VALUE"
	}
	q += " SELECT " + strings.Join(from, ", ") + " FROM pg_catalog.jsonb_populate_recordset(NULL::" + tb.q + ", $1::jsonb) r"
	args := []any{jsonArray(rows)}
	if tb.tenantCol {
		args = append(args, tenant.String())
	}
	if _, err := tx.Exec(ctx, q, args...); err != nil {
		return fmt.Errorf("postgres: importing into %s: %w", tb.q, err)
	}
	return nil
}

// resetSequences moves each sequence of the tenant's own tables past the
// imported values, so the next insert does not collide with them.
func resetSequences(ctx context.Context, tx pgx.Tx, tables []pgTable) error {
	for _, tb := range tables {
		for _, c := range tb.cols {
			if !c.serial || !tb.perTenant {
				continue
			}
			col := pgx.Identifier{c.name}.Sanitize()
			if _, err := tx.Exec(ctx, "SELECT pg_catalog.setval(s, m) FROM pg_catalog.pg_get_serial_sequence($1, $2) s, (SELECT max("+col+") m FROM "+tb.q+") x WHERE s IS NOT NULL AND m IS NOT NULL", tb.q, c.name); err != nil {
				return fmt.Errorf("postgres: resetting %s's sequence of %s: %w", tb.q, c.name, err)
			}
		}
	}
	return nil
}

func jsonArray(rows []json.RawMessage) string {
	n := 2
	for _, r := range rows {
		n += len(r) + 1
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('[')
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r)
	}
	b.WriteByte(']')
	return b.String()
}
