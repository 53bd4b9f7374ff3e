package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// lifecycle is a module's migrations and what it knows of its tenants'
// versions. Each client has its own copy (its cache is per client).
type lifecycle struct {
	migrate.Versioning
	set migrate.Set
	// shared: one migration target for all tenants (the static schema of
	// a plain client); perTenantSchema: the target is the tenant's schema.
	shared, perTenantSchema bool
	// gate refuses calls for tenants behind Required (nil: no check).
	gate *migrate.Gate
}

// lifecycleWiring loads and checks the migration options and adds the
// start-up check; it runs in Module, after every option.
func lifecycleWiring(spec *modules.Spec, cfg *config, routed bool) {
	l := &cfg.life
	l.Versioning = cfg.Versioning
	for _, r := range cfg.routes {
		// A route that is not tenant-aware and whose resolver gets the
		// tenant only when it is names one shared schema.
		owned := r.tenantAware || !rules.Kinds[r.kind].ResolverCountsOnlyWhenTenantAware
		for _, rr := range r.rels {
			l.perTenantSchema = l.perTenantSchema || rr.rel.PerTenant() && owned
		}
	}
	l.shared = !routed && !l.perTenantSchema
	var invalid []tenancy.Problem
	l.set, invalid = l.Load("sql")
	modules.AddVersions(spec, modules.Versions[*Client]{Versioning: l.Versioning, Latest: l.set.Latest(), PerTenant: !l.shared, Invalid: invalid,
		Gate: func(c *Client) *migrate.Gate { return c.life.gate }, Shared: (*Client).sharedCurrent})
}

func (l *lifecycle) forClient(module string) *lifecycle {
	c := *l
	c.gate = migrate.NewGate(module, rules.Name, l.Required)
	return &c
}

// migrationTable is where a target records its applied steps.
const migrationTable = "tenantwire_migrations"

// target is the schema the migrations of tenant run in.
func (c *Client) target(tenant tenancy.ID) string {
	if c.life.perTenantSchema {
		return SchemaName(c.prefix, tenant)
	}
	return c.static
}

// lifecycleTarget is the module's side of its migrate.Runner.
type lifecycleTarget struct{ c *Client }

// runner is the module's lifecycle: each tenant's run is one transaction
// holding an advisory lock keyed by (tenant, module), so concurrent
// migrators apply each step once and a failing step leaves the tenant at
// its previous version.
func (c *Client) runner() *migrate.Runner {
	l := c.life
	return migrate.NewRunner(migrate.Spec{Module: c.module, Backend: rules.Name, Set: l.set, Registry: l.Registry, Gate: l.gate,
		Shared: l.shared, PerTenant: !l.shared, Atomic: true, AllowTeardown: c.teardown}, lifecycleTarget{c})
}

// history is a tenant's run: one transaction on its target's connection.
type history struct {
	c       *Client
	tenant  tenancy.ID
	dry     bool
	tx      pgx.Tx
	release func()
	table   string
	// ran is what Apply ran, recorded in one insert at Close.
	ran migrate.Set
}

func (t lifecycleTarget) Open(ctx context.Context, tenant tenancy.ID, dry bool) ([]migrate.History, error) {
	c := t.c
	tx, release, err := beginTx(ctx, tenant, c.conn)
	if err != nil {
		return nil, err
	}
	schema := pgx.Identifier{c.target(tenant)}.Sanitize()
	return []migrate.History{&history{c: c, tenant: tenant, dry: dry, tx: tx, release: release, table: schema + "." + migrationTable}}, nil
}

func (h *history) Key() string { return "" }

// Applied takes the (tenant, module) lock and reads the history; the lock,
// the history and the search_path go in one round trip.
func (h *history) Applied(ctx context.Context) ([]migrate.Applied, error) {
	schema := pgx.Identifier{h.c.target(h.tenant)}.Sanitize()
	return readApplied(ctx, h.tx, h.table, schema, "tenantwire.migrate."+h.c.module+"."+h.tenant.Hex(), h.c.module, h.dry)
}

// Claim: the run holds the tenant's lock, so every pending step is its.
func (h *history) Claim(context.Context, migrate.Step) (bool, error) { return true, nil }

// Apply sends the file whole (simple protocol: it may hold several
// statements) inside the run's transaction.
func (h *history) Apply(ctx context.Context, st migrate.Step) error {
	if res, err := h.tx.Conn().PgConn().Exec(ctx, string(st.Body)).ReadAll(); err != nil {
		return &migrate.StepError{Statement: failedStatement(string(st.Body), res), Err: err}
	}
	h.ran = append(h.ran, st)
	return nil
}

// Close records what ran and commits, or rolls the whole run back.
func (h *history) Close(ctx context.Context, failed error) error {
	defer h.release()
	if failed != nil || h.dry || len(h.ran) == 0 {
		return h.tx.Rollback(ctx)
	}
	versions := make([]int64, 0, len(h.ran))
	names, sums := make([]string, 0, len(h.ran)), make([]string, 0, len(h.ran))
	for _, st := range h.ran {
		versions, names, sums = append(versions, st.Version), append(names, st.Name), append(sums, st.Checksum)
	}
	if _, err := h.tx.Exec(ctx, "INSERT INTO "+h.table+" (module, version, name, checksum) SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[])", h.c.module, versions, names, sums); err != nil {
		_ = h.tx.Rollback(ctx)
		return err
	}
	return h.tx.Commit(ctx)
}

// readApplied takes the (tenant, module) lock and reads the target's
// applied steps. Unless dry, it creates the table first and sets the
// transaction's search_path to the target schema, all in one round trip
// (one simple-protocol message: the table may not exist when it is sent).
// Dry, a missing table is no steps.
func readApplied(ctx context.Context, tx pgx.Tx, table, schema, lock, module string, dry bool) ([]migrate.Applied, error) {
	pg := tx.Conn().PgConn()
	q := "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(" + literal(lock) + ", 0));"
	if dry {
		res, err := pg.Exec(ctx, q+"SELECT pg_catalog.to_regclass("+literal(table)+") IS NOT NULL").ReadAll()
		if err != nil || string(res[len(res)-1].Rows[0][0]) != "t" {
			return nil, err
		}
		q = ""
	} else {
		q += "CREATE TABLE IF NOT EXISTS " + table +
			" (module text NOT NULL, version bigint NOT NULL, name text NOT NULL, checksum text NOT NULL," +
			" applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (module, version));" +
			"SELECT pg_catalog.set_config('search_path', " + literal(schema) + ", true);"
	}
	res, err := pg.Exec(ctx, q+"SELECT version, name, checksum FROM "+table+" WHERE module = "+literal(module)+" ORDER BY version").ReadAll()
	if err != nil {
		return nil, err
	}
	var applied []migrate.Applied
	for _, row := range res[len(res)-1].Rows {
		v, err := strconv.ParseInt(string(row[0]), 10, 64)
		if err != nil {
			return nil, err
		}
		applied = append(applied, migrate.Applied{Version: v, Name: string(row[1]), Checksum: string(row[2])})
	}
	return applied, nil
}

// literal quotes s as an SQL string literal (standard_conforming_strings,
// on since PostgreSQL 9.1, which pgx's simple protocol needs too).
func literal(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), "'", "''") + "'"
}

// failedStatement is the statement of body that failed after the results
// res of the ones before it (the whole body when that cannot be told).
func failedStatement(body string, res []*pgconn.Result) string {
	ok := 0
	for _, r := range res {
		if r.Err == nil {
			ok++
		}
	}
	if stmts := splitStatements(body); ok < len(stmts) {
		return stmts[ok]
	}
	return strings.TrimSpace(body)
}
