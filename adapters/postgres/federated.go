package postgres

import (
	"context"
	"reflect"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// FederatedConfig wires a search across several legs, ranked together.
// A hub leg names a HubSearchRoute of the module declared before this
// one; a table leg is any other static table with id, body and tsv
// columns (a per-tenant leg must be a hub). The
// route is tagged only when it is TenantAware and every leg is a hub leg
// that is tenant-aware or per-tenant; otherwise it is none.
// It never reaches namespace.
type FederatedConfig struct {
	TenantAware bool
	Hubs        []string
	Tables      []naming.Name
	// Config is the text search configuration of the query (default
	// "simple").
	Config string
}

// FederatedSearchRoute adds a federated search route and provides *FederatedSearch
// under its name.
func FederatedSearchRoute(name string, fc FederatedConfig) Option {
	if fc.Config == "" {
		fc.Config = "simple"
	}
	return modules.Own(func(c *config) {
		spec := &routeSpec{name: name, kind: kindFederatedSearch, tenantAware: fc.TenantAware, typ: reflect.TypeFor[*FederatedSearch](),
			scopedRoles: map[string]bool{}}
		var legs []fedLeg
		for _, h := range fc.Hubs {
			var hub *hubLeg
			for i := range c.hubs {
				if c.hubs[i].name == h {
					hub = &c.hubs[i]
				}
			}
			if hub == nil {
				c.errs = append(c.errs, rules.WiringInvalid(c.name, name, "leg "+h+" is not a hub search route declared before it", "declare the HubSearchRoute first, in the same module"))
				continue
			}
			role := "hub:" + h
			spec.rels = append(spec.rels, roleRel{role, hub.cfg.Table})
			spec.scopedRoles[role] = hub.cfg.TenantAware || hub.cfg.Table.PerTenant()
			legs = append(legs, fedLeg{name: h, rel: hub.cfg.Table, hubTagged: hub.cfg.TenantAware})
		}
		for _, t := range fc.Tables {
			c.checkName(name, t.Base(), maxIdent, "name the leg's table")
			if t.PerTenant() {
				// Only a hub leg may be scoped; a per-tenant table
				// would be counted as one by the tier rules.
				c.errs = append(c.errs, rules.WiringInvalid(c.name, name, "table leg "+t.Base()+" is per-tenant", "declare it with HubSearchRoute and name it in Hubs"))
			}
			role := "table:" + t.Base()
			// A table leg never separates tenants by itself: not Scoped.
			spec.rels = append(spec.rels, roleRel{role, t})
			legs = append(legs, fedLeg{name: t.Base(), rel: t})
		}
		if len(legs) == 0 {
			c.errs = append(c.errs, rules.WiringInvalid(c.name, name, "a federated search needs at least one leg", "name hub routes or tables"))
		}
		c.checkName(name, fc.Config, maxIdent, "name a text search configuration")
		spec.provide = provideRoute(func(cl *Client) *FederatedSearch {
			f := &FederatedSearch{route: route{cl, spec}, legs: legs, cfg: fc}
			f.static = staticSet(f.route, f.build)
			return f
		})
		c.routes = append(c.routes, spec)
	})
}

type fedLeg struct {
	name string
	rel  naming.Name
	// hubTagged: the leg is a tenant-aware hub; it is filtered when the
	// federated route is tagged too.
	hubTagged bool
}

// FederatedSearch is a federated search route.
type FederatedSearch struct {
	route
	legs   []fedLeg
	cfg    FederatedConfig
	static *fedStmts
}

// FederatedHit is one hit and the leg (hub route or table name) it is from.
type FederatedHit struct {
	Leg  string
	ID   string
	Rank float32
}

type fedStmts struct {
	sql
	search, count string
}

func (f *FederatedSearch) build(tenant tenancy.ID) *fedStmts {
	tagged := func(l fedLeg) bool { return f.spec.decision.Tagged && l.hubTagged }
	s := sql{tagged: false}
	for _, l := range f.legs {
		s.tagged = s.tagged || tagged(l)
	}
	q := "pg_catalog.websearch_to_tsquery('" + f.cfg.Config + "'::pg_catalog.regconfig, " + s.p(1) + ")"
	parts := make([]string, len(f.legs))
	for i, l := range f.legs {
		where := ""
		if tagged(l) {
			where = "tenant_id = $1 AND "
		}
		// The leg is its index, a literal: no name reaches the SQL text.
		parts[i] = "SELECT " + itoa(i) + " AS leg, id, pg_catalog.ts_rank(tsv, " + q + ") AS rank FROM " +
			f.qualified(l.rel, tenant) + " WHERE " + where + "tsv @@ " + q
	}
	u := strings.Join(parts, " UNION ALL ")
	return &fedStmts{sql: s,
		search: "SELECT leg, id, rank FROM (" + u + ") u ORDER BY rank DESC, leg, id LIMIT " + s.p(2),
		count:  "SELECT pg_catalog.count(*) FROM (" + u + ") u",
	}
}

// Search returns the best hits across every leg.
func (f *FederatedSearch) Search(ctx context.Context, query string, limit int) ([]FederatedHit, error) {
	return searchRows(ctx, f.route, f.static, f.build, func(st *fedStmts) string { return st.search }, query, limit,
		func(rows pgx.Rows) ([]FederatedHit, error) {
			var out []FederatedHit
			var leg int
			var h FederatedHit
			_, err := pgx.ForEachRow(rows, []any{&leg, &h.ID, &h.Rank}, func() error {
				out = append(out, FederatedHit{Leg: f.legs[leg].name, ID: h.ID, Rank: h.Rank})
				return nil
			})
			return out, err
		})
}

// Count returns how many documents of every leg match the query.
func (f *FederatedSearch) Count(ctx context.Context, query string) (int, error) {
	return queryOne[int](ctx, f.route, f.static, f.build, func(st *fedStmts) string { return st.count }, query)
}
