package postgres

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Migrations gives the module its versioned SQL migrations: every
// "<version>_<name>.sql" file at the top of fsys, written against
// unqualified table names. They run in each tenant's schema (a route with
// a per-tenant relation), in each tenant's database (a routed client), or
// once in the static schema (tagged and static routes on a plain client),
// each run in one transaction under SET LOCAL search_path, so no pooled
// connection keeps it. Provision applies them to a new tenant; MigrateAll
// to every tenant.
func Migrations(fsys fs.FS) Option {
	return func(c *config) {
		set, err := migrate.Load(fsys, "sql")
		if err != nil {
			c.errs = append(c.errs, rules.WiringInvalid(c.name, "", err.Error(), "name each migration <version>_<name>.sql, versions unique"))
		}
		c.life.set = set
	}
}

// RequiredVersion declares the migration version the module's routes need:
// the app refuses to start while a registered tenant (or the shared
// tables) is behind it, and a call for a tenant that is behind is refused
// (tenant_migration_behind). A module whose routes name per-tenant
// containers needs a TenantRegistry to know its tenants at start.
func RequiredVersion(v int64) Option { return func(c *config) { c.life.required = v } }

// TenantRegistry records the module's tenants: Provision puts them,
// Teardown removes them, MigrateAll reads them and records each tenant's
// version, and the start-up check reads it.
func TenantRegistry(r migrate.Registry) Option { return func(c *config) { c.life.registry = r } }

// lifecycle is a module's migrations and what it knows of its tenants'
// versions. Each client has its own copy (its cache is per client).
type lifecycle struct {
	set      migrate.Set
	required int64
	registry migrate.Registry
	// shared: one migration target for all tenants (the static schema of
	// a plain client); perTenantSchema: the target is the tenant's schema.
	shared, perTenantSchema bool
	// gate refuses calls for tenants behind required (nil: no check).
	gate *migrate.Gate
}

// lifecycleWiring checks the migration options and returns the start-up
// check; it runs in Module, after every option.
func lifecycleWiring(cfg *config, routed bool) ([]error, fx.Option) {
	l := &cfg.life
	for _, r := range cfg.routes {
		// A route that is not tenant-aware and whose resolver gets the
		// tenant only when it is names one shared schema.
		owned := r.tenantAware || !rules.Kinds[r.kind].ResolverCountsOnlyWhenTenantAware
		for _, rr := range r.rels {
			l.perTenantSchema = l.perTenantSchema || rr.rel.PerTenant() && owned
		}
	}
	l.shared = !routed && !l.perTenantSchema
	var errs []error
	for _, p := range migrate.RequiredProblems(l.required, l.set.Latest(), !l.shared, l.registry != nil, "postgres", "postgres.Migrations") {
		errs = append(errs, rules.WiringInvalid(cfg.name, "", p.Detail, p.Fix))
	}
	if l.required == 0 {
		return errs, fx.Options()
	}
	return errs, fx.Invoke(func(lc fx.Lifecycle, c *Client) { lc.Append(fx.StartHook(c.checkVersions)) })
}

func (l *lifecycle) forClient(module string) *lifecycle {
	return &lifecycle{set: l.set, required: l.required, registry: l.registry, shared: l.shared, perTenantSchema: l.perTenantSchema, gate: migrate.NewGate(module, rules.Name, l.required)}
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

// StepError is a migration step that failed for one tenant: its
// transaction rolled back, so the tenant stays at its previous version.
type StepError struct {
	Tenant    tenancy.ID // zero: the shared tables
	Module    string
	File      string
	Statement string
	Err       error
}

func (e *StepError) Error() string {
	who := "shared tables"
	if !e.Tenant.IsZero() {
		who = "tenant " + e.Tenant.String()
	}
	return fmt.Sprintf("postgres: module %s: migration %s failed for %s (rolled back) at %q: %v", e.Module, e.File, who, e.Statement, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Migrate applies the pending migrations to tenant (ignored when the
// module's target is shared) and returns what it applied. It holds an
// advisory transaction lock keyed by (tenant, module), so concurrent
// migrators apply each step once; the whole run is one transaction, so a
// failing step leaves the tenant at its previous version.
func (c *Client) Migrate(ctx context.Context, tenant tenancy.ID) ([]migrate.Change, error) {
	return c.migrateTenant(ctx, tenant, false)
}

// PlanMigrate lists the migrations Migrate would apply, changing nothing.
func (c *Client) PlanMigrate(ctx context.Context, tenant tenancy.ID) ([]migrate.Change, error) {
	return c.migrateTenant(ctx, tenant, true)
}

func (c *Client) migrateTenant(ctx context.Context, tenant tenancy.ID, dry bool) ([]migrate.Change, error) {
	l := c.life
	if l == nil || len(l.set) == 0 {
		return nil, nil
	}
	if l.shared {
		tenant = tenancy.ID{}
	} else if tenant.IsZero() {
		return nil, tenancy.Unbound()
	}
	pool, release, err := c.conn(ctx, tenant)
	if err != nil {
		return nil, err
	}
	defer release()
	schema := pgx.Identifier{c.target(tenant)}.Sanitize()
	table := schema + "." + migrationTable
	var changes []migrate.Change
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// The lock, the history and the search_path go in one round trip.
		applied, err := readApplied(ctx, tx, table, schema, "tenantwire.migrate."+c.module+"."+tenant.Hex(), c.module, dry)
		if err != nil {
			return err
		}
		pending, err := l.set.Pending(applied, c.module, rules.Name, tenant)
		if err != nil {
			return err
		}
		var (
			versions    = make([]int64, 0, len(pending))
			names, sums = make([]string, 0, len(pending)), make([]string, 0, len(pending))
		)
		for _, st := range pending {
			changes = append(changes, migrate.Change{Tenant: tenant, Module: c.module, Version: st.Version, Name: st.Name})
			versions, names, sums = append(versions, st.Version), append(names, st.Name), append(sums, st.Checksum)
		}
		if dry || len(pending) == 0 {
			return nil
		}
		for _, st := range pending {
			// Simple protocol: a file may hold several statements.
			if res, err := tx.Conn().PgConn().Exec(ctx, string(st.Body)).ReadAll(); err != nil {
				return &StepError{Tenant: tenant, Module: c.module, File: st.File(), Statement: failedStatement(string(st.Body), res), Err: err}
			}
		}
		_, err = tx.Exec(ctx, "INSERT INTO "+table+" (module, version, name, checksum) SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[])", c.module, versions, names, sums)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !dry {
		if l.registry != nil && !l.shared {
			if err := l.registry.SetVersion(ctx, tenant, c.module, l.set.Latest()); err != nil {
				return changes, fmt.Errorf("postgres: module %s: tenant %s migrated, registry not updated: %w", c.module, tenant, err)
			}
		}
		l.gate.Mark(tenant, "", l.set.Latest())
	}
	return changes, nil
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
