package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// route is what every route object shares: its client and wiring.
type route struct {
	c    *Client
	spec *routeSpec
}

// tenant returns the bound tenant of a tenant-scoped route, failing closed
// when none is bound; an unscoped route (tenancy off) needs none.
func (r route) tenant(ctx context.Context) (tenancy.ID, error) {
	if !r.spec.scoped {
		return tenancy.ID{}, nil
	}
	return tenancy.Require(ctx)
}

// qualified is rel's quoted name for tenant.
func (r route) qualified(rel Relation, tenant tenancy.ID) string {
	return rel.ident(r.c.prefix, r.c.static, tenant).Sanitize()
}

// perTenant reports whether any relation of the route is named per tenant,
// so its statements must be built per tenant.
func (r route) perTenant() bool {
	for _, rr := range r.spec.rels {
		if rr.rel.perTenant {
			return true
		}
	}
	return false
}

// cached returns the route's statements for tenant: built once for a
// static route, once per (tenant, route) otherwise.
func cached[S any](r route, static *S, tenant tenancy.ID, build func(tenancy.ID) *S) *S {
	if static != nil {
		return static
	}
	k := stmtKey{tenant: tenant, route: r.spec.name}
	if v, ok := r.c.stmts.get(k); ok {
		return v.(*S)
	}
	s := build(tenant)
	r.c.stmts.put(k, s)
	return s
}

// args prepends the tenant to a tagged statement's arguments.
func args(tagged bool, tenant tenancy.ID, rest ...any) []any {
	if !tagged {
		return rest
	}
	a := make([]any, 0, len(rest)+1) // one allocation, sized once
	return append(append(a, tenant.Bytes()), rest...)
}

// sql holds the placeholder layout of a possibly tagged statement: the
// tenant is $1 when tagged, and the other parameters follow it. An
// unprepared set runs without named prepared statements (see stmtCache).
type sql struct{ tagged, unprepared bool }

func (s *sql) setUnprepared()     { s.unprepared = true }
func (s *sql) isUnprepared() bool { return s.unprepared }

// mode prepends the query mode of an unprepared set to a: the statement
// is described once per connection (pgx's description cache) and runs
// unnamed, so types are still known (a []byte reaches a jsonb column).
func (s sql) mode(a []any) []any {
	if !s.unprepared {
		return a
	}
	return append([]any{pgx.QueryExecModeCacheDescribe}, a...)
}

// p is the placeholder of the i-th (1-based) non-tenant parameter.
func (s sql) p(i int) string {
	if s.tagged {
		i++
	}
	return "$" + itoa(i)
}

// where is the tenant predicate prefix of a WHERE clause.
func (s sql) where() string {
	if s.tagged {
		return "tenant_id = $1 AND "
	}
	return ""
}

// col and val prefix the tenant column and value of an INSERT.
func (s sql) col() string {
	if s.tagged {
		return "tenant_id, "
	}
	return ""
}

func (s sql) val() string {
	if s.tagged {
		return "$1, "
	}
	return ""
}

// tenantColumn is the tagged column: the default tenant by default, so
// turning tenancy on hides no existing row.
func (s sql) tenantColumn() string {
	if s.tagged {
		return "tenant_id uuid NOT NULL DEFAULT '" + tenancy.Default.String() + "', "
	}
	return ""
}

func (s sql) key(col string) string {
	if s.tagged {
		return "PRIMARY KEY (tenant_id, " + col + ")"
	}
	return "PRIMARY KEY (" + col + ")"
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

var jsonMarshal = json.Marshal

// execOne runs stmt, which touches at most one row, and returns none when
// it touched nothing: the bound tenant has no such row.
func execOne(ctx context.Context, pool pgxPool, stmt string, a []any, none error) error {
	tag, err := pool.Exec(ctx, stmt, a...)
	if err == nil && tag.RowsAffected() == 0 {
		return none
	}
	return err
}

// beginCall resolves one call's tenant, statements and pool; the caller
// releases the pool when err is nil.
func beginCall[S any](ctx context.Context, r route, static *S, build func(tenancy.ID) *S) (tenancy.ID, *S, pgxPool, func(), error) {
	tenant, err := r.tenant(ctx)
	if err != nil {
		return tenant, nil, nil, nil, err
	}
	pool, release, err := r.c.conn(ctx, tenant)
	if err != nil {
		return tenant, nil, nil, nil, routing.AtRoute(err, r.spec.name)
	}
	if err := r.c.ensureCurrent(ctx, tenant, pool, r.spec.name); err != nil {
		release()
		return tenant, nil, nil, nil, err
	}
	return tenant, cached(r, static, tenant, build), pool, release, nil
}
