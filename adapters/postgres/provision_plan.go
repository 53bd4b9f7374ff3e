package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/tenancy"
)

// PlanProvision lists what Provision would create for tenant and the
// server does not have yet, creating nothing: ProvisionAll's dry run.
// Each entry is the object's kind and its name as the server spells it
// ("schema acme_<hex>", "table acme_<hex>.orders", "index
// acme_<hex>.orders_tsv", "role acme_<hex>_reader"). The server's catalogs
// are asked, on the tenant's own database when the module is routed.
func (t lifecycleTarget) PlanProvision(ctx context.Context, tenant tenancy.ID) ([]string, error) {
	c := t.c
	if tenant.IsZero() {
		return nil, rules.Unbound(c.module, "")
	}
	stmts, err := c.provisionDDL(tenant)
	if err != nil {
		return nil, err
	}
	objs, err := provisionObjects(stmts)
	if err != nil {
		return nil, err
	}
	grants := c.hasSQLRoute() && c.routed == nil // a routed SQL route has no role of its own
	if len(objs) == 0 && !grants {
		return nil, nil
	}
	kinds, schemas, names := make([]string, len(objs)), make([]string, len(objs)), make([]string, len(objs))
	for i, o := range objs {
		kinds[i], schemas[i], names[i] = o.kind, o.schema, o.name
	}
	pool, release, err := c.conn(ctx, tenant)
	if err != nil {
		return nil, err
	}
	defer release()
	// Index and table names share pg_class, as IF NOT EXISTS sees them.
	rows, err := pool.Query(ctx, `SELECT o.i FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS o(kind, schema, name, i)
WHERE NOT CASE o.kind
	WHEN 'schema' THEN EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = o.name)
	WHEN 'role' THEN EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = o.name)
	ELSE EXISTS (SELECT FROM pg_catalog.pg_class r JOIN pg_catalog.pg_namespace n ON n.oid = r.relnamespace
		WHERE n.nspname = o.schema AND r.relname = o.name)
END ORDER BY o.i`, kinds, schemas, names)
	failed := func(err error) error {
		return fmt.Errorf("postgres: module %s: planning the provisioning of tenant %s: %w", c.module, tenant, err)
	}
	if err != nil {
		return nil, failed(err)
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, failed(err)
	}
	var out []string
	for _, i := range missing {
		out = append(out, objs[i-1].String())
	}
	if grants {
		// A tenant provisioned before the module had a SQL route has its
		// role but not the route's search path and grants (sqlGrants).
		var set bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $1
	AND EXISTS (SELECT FROM unnest(rolconfig) AS c WHERE c LIKE 'search\_path=%'))`, RoleName(c.prefix, tenant)).Scan(&set)
		if err != nil {
			return nil, failed(err)
		}
		if !set {
			out = append(out, "grants of role "+RoleName(c.prefix, tenant)+": search path "+SchemaName(c.prefix, tenant)+", read and write on its tables and sequences (SQL route)")
		}
	}
	return out, nil
}

// dbObject is one object a provisioning statement creates.
type dbObject struct{ kind, schema, name string }

func (o dbObject) String() string {
	if o.schema == "" {
		return o.kind + " " + o.name
	}
	return o.kind + " " + o.schema + "." + o.name
}

// provisionObjects reads, from Provision's statements, the objects they
// create, each once, in order. The statements are the module's own
// (provisionDDL); a creating statement it cannot read is an error, so a
// plan never leaves out what Provision would create.
func provisionObjects(stmts []string) ([]dbObject, error) {
	var out []dbObject
	seen := map[dbObject]bool{}
	add := func(o dbObject) {
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	for _, s := range stmts {
		var (
			o   dbObject
			ok  bool
			err error
		)
		switch {
		case strings.HasPrefix(s, "CREATE SCHEMA IF NOT EXISTS "):
			o.kind = "schema"
			o.name, ok = oneIdent(strings.TrimPrefix(s, "CREATE SCHEMA IF NOT EXISTS "))
		case strings.HasPrefix(s, "CREATE TABLE IF NOT EXISTS "):
			o.kind = "table"
			var parts []string
			if parts, _, err = readIdents(strings.TrimPrefix(s, "CREATE TABLE IF NOT EXISTS ")); err == nil && len(parts) == 2 {
				o.schema, o.name, ok = parts[0], parts[1], true
			}
		case strings.HasPrefix(s, "CREATE INDEX IF NOT EXISTS "):
			// An index lives in its table's schema.
			o.kind = "index"
			var idx, tbl []string
			var rest string
			if idx, rest, err = readIdents(strings.TrimPrefix(s, "CREATE INDEX IF NOT EXISTS ")); err == nil && len(idx) == 1 && strings.HasPrefix(rest, " ON ") {
				if tbl, _, err = readIdents(strings.TrimPrefix(rest, " ON ")); err == nil && len(tbl) == 2 {
					o.schema, o.name, ok = tbl[0], idx[0], true
				}
			}
		case strings.HasPrefix(s, "DO $$ BEGIN CREATE ROLE "):
			o.kind = "role"
			var parts []string
			if parts, _, err = readIdents(strings.TrimPrefix(s, "DO $$ BEGIN CREATE ROLE ")); err == nil && len(parts) == 1 {
				o.name, ok = parts[0], true
			}
		case strings.Contains(strings.ToUpper(s), "CREATE "):
		default:
			continue // grants, role attributes, upgrades of existing tables
		}
		if !ok {
			return nil, fmt.Errorf("postgres: cannot plan the provisioning statement %q (no object it creates could be read)", s)
		}
		add(o)
	}
	return out, nil
}

// oneIdent is the single quoted identifier s is.
func oneIdent(s string) (string, bool) {
	parts, rest, err := readIdents(s)
	return strings.Join(parts, ""), err == nil && len(parts) == 1 && rest == ""
}

// readIdents reads a dotted list of double-quoted identifiers (as
// pgx.Identifier.Sanitize writes them) from the start of s, and returns
// them unquoted with the rest of s.
func readIdents(s string) ([]string, string, error) {
	var parts []string
	for {
		if !strings.HasPrefix(s, `"`) {
			return nil, s, fmt.Errorf("no quoted identifier at %q", s)
		}
		var b strings.Builder
		i := 1
		for ; i < len(s); i++ {
			if s[i] != '"' {
				b.WriteByte(s[i])
				continue
			}
			if i+1 < len(s) && s[i+1] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			break
		}
		if i >= len(s) {
			return nil, s, fmt.Errorf("unterminated identifier in %q", s)
		}
		parts = append(parts, b.String())
		s = s[i+1:]
		if !strings.HasPrefix(s, ".") {
			return parts, s, nil
		}
		s = s[1:]
	}
}
