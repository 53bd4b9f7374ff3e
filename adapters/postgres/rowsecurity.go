package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// RowSecurity adds a second line under the module's tagged document and
// counter routes: provisioning enables PostgreSQL row-level security on
// their shared tables, with a policy that admits only the rows of the
// tenant set for the transaction, and every call sets its tenant and a
// role the policy binds in the same round trip as its statement. A
// statement that lost its tenant predicate then reads and writes only the
// tenant's rows. It raises no tier: the tables are still shared, and text
// that sets the tenant itself is not stopped by it.
func RowSecurity() Option { return modules.Own(func(c *config) { c.rowSecurity = true }) }

// tenantSetting is the transaction setting the policies read.
const tenantSetting = "tenantwire.tenant"

// rowSecurityPolicy is the name of the policy provisioning creates.
const rowSecurityPolicy = "tenantwire_tenant"

// rowSecurityRole is the role a guarded call runs as: the policies bind
// it, and it holds nothing but the guarded tables. [a-z0-9_] by
// construction (the prefix is checked), so it is quoted into DDL safely.
func rowSecurityRole(prefix string) string { return prefix + "rls" }

// setTenantSQL sets the role and the tenant for the transaction; run in
// the same batch as the statement, so in its implicit transaction.
const setTenantSQL = "SELECT pg_catalog.set_config('role', $1, true), pg_catalog.set_config('" + tenantSetting + "', $2, true)"

// resetRoleSQL ends a guarded statement inside a unit of work, whose
// transaction goes on: the unit's other statements run as before.
const resetRoleSQL = "SELECT pg_catalog.set_config('role', 'none', true), pg_catalog.set_config('" + tenantSetting + "', '', true)"

// guarded reports whether rr is a shared table provisioning creates
// under row security: a document route's write and history tables (its
// read too when it is the write table; a separate read is the caller's
// view), a counter's table.
func (r *routeSpec) guarded(rr roleRel) bool {
	if rr.rel.PerTenant() && !r.shared(rr.rel) {
		return false // the tenant's own schema: nothing to guard
	}
	switch rr.role {
	case "write", "history", "table":
		return true
	case "read":
		for _, o := range r.rels {
			if o.role == "write" {
				return o.rel == rr.rel
			}
		}
	}
	return false
}

// rowSecurityDDL enables row security on the guarded routes' tables, with
// the policy and the role's grants; idempotent, like the rest of
// provisioning.
func (c *Client) rowSecurityDDL() []string {
	if c.rowRole == "" {
		return nil
	}
	role := pgx.Identifier{c.rowRole}.Sanitize()
	out := []string{
		"DO $$ BEGIN CREATE ROLE " + role + " NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$",
		// A role made by someone else under this name with a way past the
		// policies is refused, as the tenant roles are (provision.go).
		"DO $$ BEGIN IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '" + c.rowRole + "' AND (rolsuper OR rolbypassrls)) THEN " +
			"EXECUTE 'ALTER ROLE " + role + " NOSUPERUSER NOBYPASSRLS'; END IF; END $$",
		"DO $$ BEGIN IF NOT pg_catalog.pg_has_role(CURRENT_USER, '" + c.rowRole + "', 'MEMBER') THEN " +
			"EXECUTE 'GRANT " + role + " TO ' || pg_catalog.quote_ident(CURRENT_USER); END IF; END $$",
		"GRANT USAGE ON SCHEMA " + pgx.Identifier{c.static}.Sanitize() + " TO " + role,
	}
	policy := "tenant_id = NULLIF(pg_catalog.current_setting('" + tenantSetting + "', true), '')::uuid"
	for _, g := range c.guardedTables() {
		out = append(out,
			"ALTER TABLE "+g.table+" ENABLE ROW LEVEL SECURITY",
			"GRANT SELECT, INSERT, UPDATE, DELETE ON "+g.table+" TO "+role,
			"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_catalog.pg_policy WHERE polrelid = '"+g.table+"'::regclass AND polname = '"+rowSecurityPolicy+"') THEN "+
				"CREATE POLICY "+rowSecurityPolicy+" ON "+g.table+" TO "+role+" USING ("+policy+") WITH CHECK ("+policy+"); END IF; END $$")
		if g.history { // its seq column's sequence
			out = append(out, "DO $$ BEGIN EXECUTE 'GRANT USAGE ON SEQUENCE ' || pg_catalog.pg_get_serial_sequence('"+g.table+"', 'seq') || ' TO "+role+"'; END $$")
		}
	}
	return out
}

// guardedTable is one shared table under row security: its quoted name,
// the first route that guards it, and whether it is a history table.
type guardedTable struct {
	table, route string
	history      bool
}

// guardedTables is the module's guarded tables, each once.
func (c *Client) guardedTables() []guardedTable {
	var out []guardedTable
	seen := map[string]bool{}
	for _, r := range c.routes {
		if !r.rowSecure {
			continue
		}
		for _, rr := range r.rels {
			t := route{c, r}.qualified(rr.rel, tenancy.ID{})
			if r.guarded(rr) && !seen[t] {
				seen[t] = true
				out = append(out, guardedTable{table: t, route: r.name, history: rr.role == "history"})
			}
		}
	}
	return out
}

// ownerSeesEveryRow asks the server, once per client, whether the
// module's own user is under the policies of a guarded table: then its
// teardown, erasure check and export would see no tenant's rows there,
// and report a tenant erased whose rows are left. Provisioning, teardown,
// the check and export each ask before they run.
func (c *Client) ownerSeesEveryRow(ctx context.Context, tenant tenancy.ID) error {
	if c.rowRole == "" || c.rowChecked.Load() {
		return nil
	}
	pool, release, err := c.conn(ctx, tenant)
	if err != nil {
		return err
	}
	defer release()
	complete, err := c.checkRowSecurity(ctx, pool)
	if err != nil {
		return err
	}
	c.rowChecked.Store(complete) // asked again while a table is still to be made
	return nil
}

// checkRowSecurity reports whether every guarded table exists, and
// refuses one the module's user is under the policies of.
func (c *Client) checkRowSecurity(ctx context.Context, q querier) (bool, error) {
	complete := true
	for _, g := range c.guardedTables() {
		var exists, active bool
		if err := q.QueryRow(ctx, "SELECT r IS NOT NULL, COALESCE(pg_catalog.row_security_active(r), false) FROM pg_catalog.to_regclass($1) r", g.table).Scan(&exists, &active); err != nil {
			return false, err
		}
		complete = complete && exists
		if active {
			return false, &tenancy.Error{Code: CodeRowSecurityOwner, Module: c.module, Backend: rules.Name, Route: g.route,
				Detail: fmt.Sprintf("the module's user is under the row security of %s, so its teardown and erasure check would not see every tenant's rows", g.table),
				Fix:    "connect the module as the owner of its tables (the user that provisions them), or give that user BYPASSRLS"}
		}
	}
	return complete, nil
}

// rowBatcher is what a guarded call's statements are sent through: a
// pool, or a unit of work's transaction.
type rowBatcher interface {
	querier
	batcher
}

// rowSecured runs each statement of one call in a batch after setTenantSQL:
// one round trip, one transaction (the batch's implicit one, or the unit
// of work's, where resetRoleSQL follows the statement).
type rowSecured struct {
	q            rowBatcher
	role, tenant string
	inUnit       bool
}

var errRowSecuredBegin = errors.New("postgres: a row-secured route opens no transaction of its own")

func (s rowSecured) batch(sql string, args []any) *pgx.Batch {
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			args = args[1:] // a batch runs in the connection's mode
		}
	}
	b := &pgx.Batch{}
	b.Queue(setTenantSQL, s.role, s.tenant)
	b.Queue(sql, args...)
	if s.inUnit {
		b.Queue(resetRoleSQL)
	}
	return b
}

// finish reads what follows the statement and closes the batch.
func (s rowSecured) finish(br pgx.BatchResults, err error) error {
	if s.inUnit && err == nil {
		_, err = br.Exec()
	}
	return errors.Join(err, br.Close())
}

func (s rowSecured) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br := s.q.SendBatch(ctx, s.batch(sql, args))
	if _, err := br.Exec(); err != nil {
		return pgconn.CommandTag{}, errors.Join(err, br.Close())
	}
	tag, err := br.Exec()
	return tag, s.finish(br, err)
}

func (s rowSecured) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br := s.q.SendBatch(ctx, s.batch(sql, args))
	if _, err := br.Exec(); err != nil {
		return nil, errors.Join(err, br.Close())
	}
	rows, err := br.Query()
	if err != nil {
		return nil, errors.Join(err, br.Close())
	}
	return &rowSecuredRows{Rows: rows, s: s, br: br}, nil
}

func (s rowSecured) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return rowSecuredRow{s: s, br: s.q.SendBatch(ctx, s.batch(sql, args))}
}

func (s rowSecured) Begin(context.Context) (pgx.Tx, error) { return nil, errRowSecuredBegin }

type rowSecuredRows struct {
	pgx.Rows
	s      rowSecured
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *rowSecuredRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.s.finish(r.br, r.Rows.Err())
}

func (r *rowSecuredRows) Err() error {
	if r.closed {
		return r.err
	}
	return r.Rows.Err()
}

func (r *rowSecuredRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

type rowSecuredRow struct {
	s  rowSecured
	br pgx.BatchResults
}

func (r rowSecuredRow) Scan(dest ...any) error {
	if _, err := r.br.Exec(); err != nil {
		return errors.Join(err, r.br.Close())
	}
	err := r.br.QueryRow().Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		if ferr := r.s.finish(r.br, nil); ferr != nil {
			return ferr
		}
		return err
	}
	return r.s.finish(r.br, err)
}

// guards reports whether RowSecurity guards a route of the module.
func (cfg *config) guards() bool {
	for _, r := range cfg.routes {
		if r.rowSecure {
			return true
		}
	}
	return false
}

// rowSecurityProblems refuses RowSecurity where it guards nothing. A
// placement's module is exempt: the option reaches every placement, and
// only the tagged one has shared tables.
func (cfg *config) rowSecurityProblems(routed bool) []error {
	if !cfg.rowSecurity || cfg.placed != nil {
		return nil
	}
	switch {
	case routed:
		return []error{rules.WiringInvalid(cfg.name, "", "RowSecurity guards shared tables; a routed client gives every tenant its own database",
			"drop postgres.RowSecurity, or run the module on a plain client with tagged routes")}
	case !cfg.guards():
		return []error{rules.WiringInvalid(cfg.name, "", "RowSecurity guards the shared tables of tagged document and counter routes, and the module has none",
			"drop postgres.RowSecurity, or give the module a tenant-aware document or counter route on a shared table")}
	}
	return nil
}
