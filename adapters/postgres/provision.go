package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Provision creates what tenant needs: its schema (when a route resolves
// one per tenant), every route's tables and indexes, and the confined
// reader role of dynamic reads, in one transaction holding an advisory
// lock per schema prefix, so concurrent calls are safe. The zero tenant
// has nothing of its own: static tables are created with every tenant's.
func (t lifecycleTarget) Provision(ctx context.Context, tenant tenancy.ID) error {
	if tenant.IsZero() {
		return nil
	}
	stmts, err := t.c.provisionDDL(tenant)
	if err != nil {
		return err
	}
	if err := t.c.inLockedTx(ctx, tenant, stmts); err != nil {
		return t.c.ownedElsewhere(tenant, err)
	}
	return t.c.ownerSeesEveryRow(ctx, tenant)
}

func (c *Client) provisionDDL(tenant tenancy.ID) ([]string, error) {
	schema := pgx.Identifier{SchemaName(c.prefix, tenant)}.Sanitize()
	role := pgx.Identifier{RoleName(c.prefix, tenant)}.Sanitize()
	var out []string
	if c.routed != nil {
		// First: a database recorded as another tenant's gets nothing.
		out = append(out, c.ownerDDL(tenant)...)
	}
	shared, writes := false, false
	var secret []byte
	for _, r := range c.routes {
		for _, rr := range r.rels {
			shared = shared || r.shared(rr.rel)
		}
		// A routed SQL route runs as the tenant database's own user: no
		// role of the module's to create or grant.
		writes = writes || r.kind == kindSQL && c.routed == nil
		if r.login != nil {
			secret = r.login
		}
	}
	confined := c.confinesRole()
	if c.ownsSchema() {
		out = append(out, "CREATE SCHEMA IF NOT EXISTS "+schema)
	}
	if shared {
		// A per-tenant relation the rules resolve for no tenant names the
		// zero tenant's schema, one for every tenant.
		out = append(out, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{SchemaName(c.prefix, tenancy.ID{})}.Sanitize())
	}
	for _, r := range c.routes {
		if r.ddl != nil {
			out = append(out, r.ddl(c, tenant)...)
		}
	}
	out = append(out, c.rowSecurityDDL()...)
	if confined {
		// Role names are [a-z0-9_] by construction (names.go), so quoting
		// them into the DO body is safe. The role holds nothing but usage
		// on its schema and select on its tables: it cannot inherit or
		// create anything, and logs in only for DynamicLogin.
		login := "NOLOGIN CONNECTION LIMIT 0"
		if secret != nil {
			l, err := loginRoleDDL(secret, RoleName(c.prefix, tenant))
			if err != nil {
				return nil, err
			}
			login = l
		}
		out = append(out,
			"DO $$ BEGIN CREATE ROLE "+role+" NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$",
			"ALTER ROLE "+role+" NOINHERIT NOCREATEDB NOCREATEROLE "+login,
			// Naming SUPERUSER, REPLICATION or BYPASSRLS at all, even to
			// deny them, takes a superuser, which a managed server's
			// provisioning user (CREATEROLE) is not. They are revoked only
			// from a role found holding one: a role someone else made
			// under the tenant's name. A provisioning user that cannot
			// revoke them fails here, before the role is granted anything.
			"DO $$ BEGIN IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '"+RoleName(c.prefix, tenant)+"' AND (rolsuper OR rolreplication OR rolbypassrls)) THEN "+
				"EXECUTE 'ALTER ROLE "+role+" NOSUPERUSER NOREPLICATION NOBYPASSRLS'; END IF; END $$",
			"GRANT USAGE ON SCHEMA "+schema+" TO "+role,
			"GRANT SELECT ON ALL TABLES IN SCHEMA "+schema+" TO "+role,
			// A superuser may SET ROLE to any role already, and each grant
			// makes the server check membership cycles over every role
			// the user belongs to (about a second per grant at 10,000
			// tenant roles): grant only where it is needed.
			"DO $$ BEGIN IF NOT pg_catalog.pg_has_role(CURRENT_USER, '"+RoleName(c.prefix, tenant)+"', 'MEMBER') THEN "+
				"EXECUTE 'GRANT "+role+" TO ' || pg_catalog.quote_ident(CURRENT_USER); END IF; END $$",
		)
		if writes {
			out = append(out, sqlGrants(schema, role)...)
		}
	}
	return out, nil
}

// sqlGrants is what a SQL route needs of the tenant's role: its search
// path is its schema (set by the server at every login, so no statement
// of the route pays for it, and a pooler keeps it), and it reads and
// writes the tables and sequences there, those the module's migrations
// create later included. Nothing else: no TRUNCATE, REFERENCES, TRIGGER
// or CREATE, and nothing outside the schema.
func sqlGrants(schema, role string) []string {
	return []string{
		"ALTER ROLE " + role + " SET search_path = " + schema,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + schema + " TO " + role,
		"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA " + schema + " TO " + role,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA " + schema + " GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO " + role,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA " + schema + " GRANT USAGE, SELECT ON SEQUENCES TO " + role,
	}
}

// Teardown drops tenant's schema and role and deletes its rows from
// tagged tables: the families of inventory.go, which Verify counts.
func (t lifecycleTarget) Teardown(ctx context.Context, tenant tenancy.ID) error {
	c := t.c
	if err := c.ownerSeesEveryRow(ctx, tenant); err != nil {
		return err
	}
	var stmts []string
	if c.routed != nil {
		stmts = append(stmts, c.ownerCheck(tenant)) // another tenant's database: nothing removed
	}
	for _, f := range c.families(tenant) {
		stmts = append(stmts, f.remove)
	}
	if c.routed != nil {
		stmts = append(stmts, resetOwner())
	} else {
		// Other clients' ownership gates drop the tenant's positives once
		// this commits (gatesync.go).
		stmts = append(stmts, "SELECT pg_catalog.pg_notify('"+gateChannel+"', '"+gateTenantNotice(tenant)+"')")
	}
	if err := c.inLockedTx(ctx, tenant, stmts); err != nil {
		return c.ownedElsewhere(tenant, err)
	}
	// Connections logged in as the dropped role are closed.
	c.mu.Lock()
	logins := c.logins
	c.mu.Unlock()
	for _, p := range logins {
		p.Evict(tenant)
	}
	c.forgetTenant(tenant)
	return nil
}

func (c *Client) inLockedTx(ctx context.Context, tenant tenancy.ID, stmts []string) error {
	pool, release, err := c.conn(ctx, tenant)
	if err != nil {
		return err
	}
	defer release()
	// One lock per prefix serializes provisioning in a database when a
	// route creates shared tables or schemas, so that DDL never races;
	// when every relation is the tenant's own, tenants provision in
	// parallel under a lock of their own.
	lock := "tenantwire.provision." + c.prefix
	if c.tenantOwnedDDL() {
		lock += "." + tenant.Hex()
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// One round trip: the statements are literal text (no parameters).
		body := "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(" + literal(lock) + ", 0));\n" + strings.Join(stmts, ";\n")
		if res, err := tx.Conn().PgConn().Exec(ctx, body).ReadAll(); err != nil {
			ok := -1 // the lock's result
			for _, r := range res {
				if r.Err == nil {
					ok++
				}
			}
			stmt := strings.Join(stmts, "; ")
			if ok >= 0 && ok < len(stmts) {
				stmt = stmts[ok]
			}
			return fmt.Errorf("postgres: provisioning tenant %s: %s: %w", tenant, stmt, err)
		}
		return nil
	})
}

// tenantOwnedDDL reports whether every relation the module's routes
// create is named per tenant and resolved with the tenant (not the one
// shared schema of a route that is not tenant-aware).
func (c *Client) tenantOwnedDDL() bool {
	for _, r := range c.routes {
		if r.ddl == nil {
			continue
		}
		for _, rr := range r.rels {
			if !rr.rel.PerTenant() || !r.tenantAware && rules.Kinds[r.kind].ResolverCountsOnlyWhenTenantAware {
				return false
			}
		}
	}
	return true
}
