package postgres

import (
	"context"
	"errors"
	"reflect"

	"github.com/tenantwire/tenantwire/capability"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/tenancy"
)

// SearchConfig wires a full-text search route. Heap holds the documents
// (id, body and a generated tsvector); Index is the GIN index on it, which
// PostgreSQL keeps in the heap's schema; Read is what searches query,
// usually the heap itself (a different relation, such as a view, is the
// caller's to create). All three count toward namespace.
type SearchConfig struct {
	TenantAware       bool
	Read, Heap, Index naming.Name
	// Config is the text search configuration (default "simple").
	Config string
}

// SearchRoute adds a search route and provides *Search.
func SearchRoute(name string, sc SearchConfig) Option {
	return modules.Own(func(c *config) {
		if sc.Config == "" {
			sc.Config = "simple"
		}
		spec := &routeSpec{name: name, kind: kindSearch, tenantAware: sc.TenantAware, typ: reflect.TypeFor[*Search](),
			rels: []roleRel{{"read", sc.Read}, {"heap", sc.Heap}, {"index", sc.Index}}}
		for _, rr := range spec.rels {
			if err := validName(rr.rel.Base(), maxIdent); err != nil {
				c.errs = append(c.errs, rules.WiringInvalid(c.name, name, rr.role+": "+err.Error(), "name Read, Heap and Index with lower-case names"))
			}
		}
		if sc.Index.PerTenant() != sc.Heap.PerTenant() {
			c.errs = append(c.errs, rules.WiringInvalid(c.name, name, "an index lives in its table's schema: Index and Heap must both be per-tenant or both static", "resolve Index like Heap"))
		}
		c.addSearch(spec, sc)
	})
}

// addSearch adds spec as a route over sc's heap and text index, provided as
// a *Search; it checks sc.Config (a search route and a hub search alike).
func (c *config) addSearch(spec *routeSpec, sc SearchConfig) {
	c.checkName(spec.name, sc.Config, maxIdent, "name a text search configuration")
	spec.ddl = func(cl *Client, tenant tenancy.ID) []string { return searchDDL(route{cl, spec}, sc, tenant) }
	spec.provide = provideRoute(func(cl *Client) *Search {
		x := &Search{route: route{cl, spec}, cfg: sc}
		x.static = staticSet(x.route, x.build)
		return x
	})
	c.routes = append(c.routes, spec)
}

// searchDDL creates a search heap and its text index.
func searchDDL(r route, sc SearchConfig, tenant tenancy.ID) []string {
	s := sql{tagged: r.spec.decision.Tagged}
	heap := r.qualified(sc.Heap, tenant)
	return []string{
		"CREATE TABLE IF NOT EXISTS " + heap + " (" + s.tenantColumn() + "id text NOT NULL, body text NOT NULL, " +
			"tsv tsvector GENERATED ALWAYS AS (pg_catalog.to_tsvector('" + sc.Config + "'::pg_catalog.regconfig, body)) STORED, " + s.key("id") + ")",
		"CREATE INDEX IF NOT EXISTS " + pgx.Identifier{sc.Index.Base()}.Sanitize() + " ON " + heap + " USING gin (tsv)",
	}
}

// Search is a full-text search route.
type Search struct {
	route
	cfg    SearchConfig
	static *searchStmts
}

type searchStmts struct {
	sql
	put, del, search, count string
}

func (x *Search) build(tenant tenancy.ID) *searchStmts {
	s := sql{tagged: x.spec.decision.Tagged}
	heap, read := x.qualified(x.cfg.Heap, tenant), x.qualified(x.cfg.Read, tenant)
	conflict := "(id)"
	if s.tagged {
		conflict = "(tenant_id, id)"
	}
	q := "pg_catalog.websearch_to_tsquery('" + x.cfg.Config + "'::pg_catalog.regconfig, " + s.p(1) + ")"
	return &searchStmts{
		sql:    s,
		put:    "INSERT INTO " + heap + " (" + s.col() + "id, body) VALUES (" + s.val() + s.p(1) + ", " + s.p(2) + ") ON CONFLICT " + conflict + " DO UPDATE SET body = EXCLUDED.body",
		del:    "DELETE FROM " + heap + " WHERE " + s.where() + "id = " + s.p(1),
		search: "SELECT id, pg_catalog.ts_rank(tsv, " + q + ") AS rank FROM " + read + " WHERE " + s.where() + "tsv @@ " + q + " ORDER BY rank DESC, id LIMIT " + s.p(2),
		count:  "SELECT pg_catalog.count(*) FROM " + read + " WHERE " + s.where() + "tsv @@ " + q,
	}
}

func (x *Search) begin(ctx context.Context) (context.Context, tenancy.ID, *searchStmts, querier, func(), error) {
	return beginCall(ctx, x.route, x.static, x.build)
}

// Put indexes body under id, replacing what was there.
func (x *Search) Put(ctx context.Context, id, body string) (err error) {
	defer x.notProvisioned(&err)
	_, err = execRows(ctx, x.route, x.static, x.build, func(st *searchStmts) string { return st.put }, id, body)
	return err
}

// Remove drops id from the index, or fails with document.ErrNotFound.
func (x *Search) Remove(ctx context.Context, id string) (err error) {
	defer x.notProvisioned(&err)
	ctx, tenant, st, pool, release, err := x.begin(ctx)
	if err != nil {
		return err
	}
	defer release()
	return execOne(ctx, pool, st.del, st.mode(args(st.tagged, tenant, id)), document.ErrNotFound)
}

// Search returns the best hits for a web-search style query.
func (x *Search) Search(ctx context.Context, query string, limit int) (_ []capability.Hit, err error) {
	defer x.notProvisioned(&err)
	return searchRows(ctx, x.route, x.static, x.build, func(st *searchStmts) string { return st.search }, query, limit,
		func(rows pgx.Rows) ([]capability.Hit, error) {
			return pgx.CollectRows(rows, func(row pgx.CollectableRow) (h capability.Hit, err error) {
				err = row.Scan(&h.ID, &h.Rank)
				return h, err
			})
		})
}

// searchRows runs the search statement pick chooses with query and limit,
// the number of best hits, which must be positive (a search route's and a
// federated search's alike).
func searchRows[R any, S stmtSet](ctx context.Context, r route, static *S, build func(tenancy.ID) *S, pick func(*S) string,
	query string, limit int, collect func(pgx.Rows) (R, error)) (R, error) {
	if limit <= 0 {
		var none R
		return none, errors.New("postgres: search limit must be positive")
	}
	return queryRows(ctx, r, static, build, pick, collect, query, limit)
}

// Count returns how many documents match the query.
func (x *Search) Count(ctx context.Context, query string) (_ int, err error) {
	defer x.notProvisioned(&err)
	return queryOne[int](ctx, x.route, x.static, x.build, func(st *searchStmts) string { return st.count }, query)
}
