package postgres

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Registry is the default tenant registry: two tables in one schema of a
// PostgreSQL database, named schema-qualified in every statement (no
// search_path). It implements migrate.Registry.
type Registry struct {
	pool          *pgxpool.Pool
	tenants, vers string
	schema        string
	once          sync.Mutex
	ready         bool
}

// NewRegistry keeps the registry in schema (created on first use, with
// its tables) of pool's database. The schema name follows the module's
// naming rules: lower-case letters, digits and _.
func NewRegistry(pool *pgxpool.Pool, schema string) (*Registry, error) {
	if err := validName(schema, maxIdent); err != nil {
		return nil, err
	}
	// A tenant's teardown would drop the registry, and its confined role
	// could read every tenant's entry.
	if e := rules.StaticInTenantSpace("", "", "registry schema", schema, schemaSpace, "the schema passed to postgres.NewRegistry"); e != nil {
		return nil, e
	}
	s := pgx.Identifier{schema}.Sanitize()
	return &Registry{pool: pool, schema: s, tenants: s + ".tenantwire_tenants", vers: s + ".tenantwire_tenant_versions"}, nil
}

func (r *Registry) ensure(ctx context.Context) error {
	r.once.Lock()
	defer r.once.Unlock()
	if r.ready {
		return nil
	}
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		// Two services creating one registry at once must not race.
		if _, err := tx.Exec(ctx, "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended($1, 0))", "tenantwire.registry."+r.schema); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+r.schema+";"+
			"CREATE TABLE IF NOT EXISTS "+r.tenants+" (tenant_id uuid PRIMARY KEY, state text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());"+
			"CREATE TABLE IF NOT EXISTS "+r.vers+" (tenant_id uuid NOT NULL REFERENCES "+r.tenants+" ON DELETE CASCADE, module text NOT NULL, version bigint NOT NULL, PRIMARY KEY (tenant_id, module))")
		return err
	})
	r.ready = err == nil
	return err
}

// Put records tenant in state s.
func (r *Registry) Put(ctx context.Context, tenant tenancy.ID, s migrate.State) error {
	if err := r.ensure(ctx); err != nil {
		return err
	}
	_, err := r.pool.Exec(ctx, "INSERT INTO "+r.tenants+" (tenant_id, state) VALUES ($1, $2) ON CONFLICT (tenant_id) DO UPDATE SET state = EXCLUDED.state, updated_at = now()", tenant.Bytes(), string(s))
	return err
}

// SetVersion records tenant's migration version of module; it never moves
// a recorded version back (a slow migrator finishing late).
func (r *Registry) SetVersion(ctx context.Context, tenant tenancy.ID, module string, version int64) error {
	if err := r.ensure(ctx); err != nil {
		return err
	}
	_, err := r.pool.Exec(ctx, "INSERT INTO "+r.vers+" (tenant_id, module, version) SELECT $1, $2, $3 WHERE EXISTS (SELECT FROM "+r.tenants+" WHERE tenant_id = $1)"+
		" ON CONFLICT (tenant_id, module) DO UPDATE SET version = GREATEST("+r.vers+".version, EXCLUDED.version)", tenant.Bytes(), module, version)
	return err
}

// Remove forgets tenant and its versions.
func (r *Registry) Remove(ctx context.Context, tenant tenancy.ID) error {
	if err := r.ensure(ctx); err != nil {
		return err
	}
	_, err := r.pool.Exec(ctx, "DELETE FROM "+r.tenants+" WHERE tenant_id = $1", tenant.Bytes())
	return err
}

// RemoveModule forgets module's version of tenant, and tenant once no
// other module's version is left, in one statement (the outer DELETE
// sees the versions as they were before the inner one).
func (r *Registry) RemoveModule(ctx context.Context, tenant tenancy.ID, module string) error {
	if err := r.ensure(ctx); err != nil {
		return err
	}
	_, err := r.pool.Exec(ctx, "WITH gone AS (DELETE FROM "+r.vers+" WHERE tenant_id = $1 AND module = $2)"+
		" DELETE FROM "+r.tenants+" WHERE tenant_id = $1 AND NOT EXISTS (SELECT FROM "+r.vers+" v WHERE v.tenant_id = $1 AND v.module <> $2)", tenant.Bytes(), module)
	return err
}

// List returns every tenant with its versions, ordered by tenant.
func (r *Registry) List(ctx context.Context) ([]migrate.Tenant, error) {
	if err := r.ensure(ctx); err != nil {
		return nil, err
	}
	rows, err := r.pool.Query(ctx, "SELECT t.tenant_id, t.state, v.module, v.version FROM "+r.tenants+" t LEFT JOIN "+r.vers+" v USING (tenant_id) ORDER BY t.tenant_id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []migrate.Tenant
	for rows.Next() {
		var (
			id      [16]byte
			state   string
			module  *string
			version *int64
		)
		if err := rows.Scan(&id, &state, &module, &version); err != nil {
			return nil, err
		}
		tid, err := tenancy.IDFromBytes(id)
		if err != nil {
			return nil, err
		}
		if n := len(out); n == 0 || out[n-1].ID != tid {
			out = append(out, migrate.Tenant{ID: tid, State: migrate.State(state), Versions: map[string]int64{}})
		}
		if module != nil {
			out[len(out)-1].Versions[*module] = *version
		}
	}
	return out, rows.Err()
}
