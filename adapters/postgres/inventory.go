package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// ownedRoles are the relation roles whose rows a route writes.
var ownedRoles = []string{"write", "history", "heap", "table", "hub"}

// pgFamily is one family of a tenant's data in the module's database: its
// declaration, the statement Teardown removes it with and the query
// Verify counts what is left of it with.
type pgFamily struct {
	migrate.Family
	remove, count string
	// table is the relation count reads, which may not exist (a tenant
	// never provisioned, a table not migrated yet): "" for the catalog.
	table string
}

// families is everything the module stores for tenant: its rows in the
// tagged tables its routes write (outbox, inbox, idempotency and counter
// tables included: they are table routes), its schema (with every
// per-tenant table and their migration history) and its confined role.
func (c *Client) families(tenant tenancy.ID) []pgFamily {
	var out []pgFamily
	lit := literal(tenant.String())
	for _, r := range c.routes {
		if !r.decision.Tagged {
			continue
		}
		for _, rr := range r.rels {
			// Only the tables a route writes hold rows: an index or a read
			// relation (possibly a view) is not deleted from.
			if r.decision.ResolvesPerTenant(rr.role) || r.ddl == nil || !slices.Contains(ownedRoles, rr.role) {
				continue
			}
			q := route{c, r}.qualified(rr.rel, tenant)
			out = append(out, pgFamily{
				Family: migrate.Family{Name: "rows " + rr.role, Kind: migrate.KindRows, Where: q + " WHERE tenant_id", Route: r.name},
				remove: "DELETE FROM " + q + " WHERE tenant_id = " + lit,
				count:  "SELECT count(*) FROM " + q + " WHERE tenant_id = " + lit,
				table:  q,
			})
		}
	}
	schema, role := SchemaName(c.prefix, tenant), RoleName(c.prefix, tenant)
	ownsSchema := c.ownsSchema()
	if c.routed != nil {
		out = append(out, c.staticFamily(tenant))
	}
	if c.hasSQLRoute() && ownsSchema {
		// The service's own tables (its migrations'), dropped before the
		// schema so the count names them, not only the schema around them.
		out = append(out, pgFamily{Family: migrate.Family{Name: "tables", Kind: migrate.KindTable, Where: schema + ".*"},
			remove: "DO $$ DECLARE t text; BEGIN FOR t IN SELECT pg_catalog.format('%I.%I', schemaname, tablename) FROM pg_catalog.pg_tables WHERE schemaname = " +
				literal(schema) + " LOOP EXECUTE 'DROP TABLE IF EXISTS ' || t || ' CASCADE'; END LOOP; END $$",
			count: "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = " + literal(schema)})
	}
	if ownsSchema {
		out = append(out, pgFamily{Family: migrate.Family{Name: "schema", Kind: migrate.KindSchema, Where: schema},
			remove: "DROP SCHEMA IF EXISTS " + pgx.Identifier{schema}.Sanitize() + " CASCADE",
			count:  "SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = " + literal(schema)})
	}
	if c.confinesRole() {
		out = append(out, pgFamily{Family: migrate.Family{Name: "role", Kind: migrate.KindRole, Where: role},
			remove: "DO $$ BEGIN IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '" + role + "') THEN " +
				"EXECUTE 'DROP OWNED BY " + role + "'; EXECUTE 'DROP ROLE " + role + "'; END IF; END $$",
			count: "SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname = " + literal(role)})
	}
	return out
}

// Verify counts, on the server, what is left of every family Teardown
// removes: one query for which tagged tables exist, then one batch of
// counts.
func (t lifecycleTarget) Verify(ctx context.Context, tenant tenancy.ID) (migrate.Erasure, error) {
	c := t.c
	if err := c.ownerSeesEveryRow(ctx, tenant); err != nil {
		return migrate.Erasure{}, err
	}
	fams := c.families(tenant)
	pool, release, err := c.conn(ctx, tenant)
	if err != nil {
		return migrate.Erasure{}, err
	}
	defer release()
	var tables []string
	for _, f := range fams {
		if f.table != "" {
			tables = append(tables, f.table)
		}
	}
	exists := map[string]bool{}
	if len(tables) > 0 {
		rows, _ := pool.Query(ctx, "SELECT t FROM unnest($1::text[]) t WHERE pg_catalog.to_regclass(t) IS NOT NULL", tables)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return migrate.Erasure{}, fmt.Errorf("postgres: verifying offboarding: %w", err)
		}
		for _, n := range names {
			exists[n] = true
		}
	}
	var e migrate.Erasure
	b := &pgx.Batch{}
	var queued []pgFamily
	for _, f := range fams {
		if f.table != "" && !exists[f.table] {
			e.Check(f.Family, 0, "")
			continue
		}
		b.Queue(f.count)
		queued = append(queued, f)
	}
	res := pool.SendBatch(ctx, b)
	defer res.Close()
	for _, f := range queued {
		var n int64
		if err := res.QueryRow().Scan(&n); err != nil {
			return migrate.Erasure{}, fmt.Errorf("postgres: verifying offboarding: %s: %w", f.count, err)
		}
		e.Check(f.Family, n, f.Where)
	}
	return e, nil
}

// staticFamily is a routed tenant's tables in the static schema of its
// own database that are the module's (ownsStatic): all of them (the
// routes', the migrations', their history, the owner record; an
// extension's stay) when the module's migrations run there, else the
// routes' own and the owner record. An extension's tables are the
// extension's.
func (c *Client) staticFamily(tenant tenancy.ID) pgFamily {
	where := " WHERE n.nspname = " + literal(c.static) + " AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND NOT EXISTS (" + extensionMember + ")"
	scope := c.static + ".* in the tenant's database"
	if !c.ownsStatic() {
		own := slices.Sorted(maps.Keys(c.staticTables()))
		names := []string{literal(ownerTableOf(tenant))}
		for _, n := range own {
			names = append(names, literal(n))
		}
		where += " AND c.relname IN (" + strings.Join(names, ", ") + ")"
		scope = c.static + ".{" + strings.Join(own, ",") + "} in the tenant's database"
	}
	tables := "SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace" + where
	return pgFamily{Family: migrate.Family{Name: "static tables", Kind: migrate.KindTable, Where: scope},
		remove: "DO $$ DECLARE t text; BEGIN FOR t IN " + tables + " LOOP EXECUTE 'DROP TABLE IF EXISTS ' || t || ' CASCADE'; END LOOP; END $$",
		count:  "SELECT count(*) FROM (" + tables + ") x"}
}

// ownsStatic reports whether the static schema of a routed tenant's
// database is the module's whole: its migrations run there. Another
// module routed to the same database may hold tables there otherwise
// (give each such module a StaticSchema of its own), so the module
// counts only its routes' tables as its.
func (c *Client) ownsStatic() bool {
	return c.routed != nil && !c.life.perTenantSchema && len(c.life.set) > 0
}

// staticTables is the static tables the module's routes write in a
// routed tenant's own database (none on a plain client), each of the
// first route naming it.
func (c *Client) staticTables() map[string]string {
	out := map[string]string{}
	if c.routed == nil {
		return out
	}
	for _, r := range c.routes {
		if r.ddl == nil || r.decision.Global {
			continue
		}
		for _, rr := range r.rels {
			if _, ok := out[rr.rel.Base()]; !ok && slices.Contains(ownedRoles, rr.role) && !r.decision.ResolvesPerTenant(rr.role) {
				out[rr.rel.Base()] = r.name
			}
		}
	}
	return out
}

// confinesRole reports whether a route confines to the tenant's role, so
// that Provision creates it (a routed SQL route runs as the tenant
// database's own user instead).
func (c *Client) confinesRole() bool {
	for _, r := range c.routes {
		if r.tenantRole && !(r.kind == kindSQL && c.routed != nil) {
			return true
		}
	}
	return false
}

// ownsSchema reports whether the tenant's schema is the module's: when
// a route resolves a relation per tenant, so that Provision creates it.
// Otherwise another module of the same prefix, or another placement of
// this one, may hold it, and the module neither exports, imports, tears
// down nor verifies it (nor the role, unless a route confines to it).
func (c *Client) ownsSchema() bool {
	for _, r := range c.routes {
		if len(r.decision.PerTenant) > 0 {
			return true
		}
	}
	return false
}

// hasSQLRoute reports whether the module runs the service's own SQL,
// whose tables are a family of their own.
func (c *Client) hasSQLRoute() bool { return hasSQL(c.routes) }

func (cfg *config) hasSQLRoute() bool { return hasSQL(cfg.routes) }

func hasSQL(routes []*routeSpec) bool {
	for _, r := range routes {
		if r.kind == kindSQL {
			return true
		}
	}
	return false
}
