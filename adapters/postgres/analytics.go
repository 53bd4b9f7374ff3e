package postgres

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Agg is an aggregate function of a named analytics query.
type Agg string

const (
	AggCount Agg = "count"
	AggSum   Agg = "sum"
	AggAvg   Agg = "avg"
	AggMin   Agg = "min"
	AggMax   Agg = "max"
)

// Aggregate is one named query over a document route's table: Agg of the
// numeric JSON field Field (unused by count), grouped by the JSON field
// GroupBy ("" for one total), over the records matching Filters.
type Aggregate struct {
	Agg     Agg
	Field   string
	GroupBy string
	Filters []document.Filter
}

// AnalyticsConfig wires an analytics route over Source, a table written
// by a document route (id, version, value jsonb).
type AnalyticsConfig struct {
	TenantAware bool
	Source      naming.Name
	Queries     map[string]Aggregate
}

// AnalyticsRoute adds an analytics route and provides *Analytics. Statements
// are built by the adapter from the Aggregates, never taken as text.
func AnalyticsRoute(name string, ac AnalyticsConfig) Option {
	return modules.Own(func(c *config) {
		spec := &routeSpec{name: name, kind: kindAnalytics, tenantAware: ac.TenantAware, typ: reflect.TypeFor[*Analytics](),
			rels: []roleRel{{"source", ac.Source}}}
		c.checkName(name, ac.Source.Base(), maxIdent, "set AnalyticsConfig.Source to a table with a lower-case name")
		for qn, a := range ac.Queries {
			if err := a.validate(); err != nil {
				c.errs = append(c.errs, rules.WiringInvalid(c.name, name, "query "+qn+": "+err.Error(),
					"correct AnalyticsConfig.Queries["+strconv.Quote(qn)+"]: Agg one of count, sum, avg, min, max, and Field, GroupBy and Filters naming lower-case fields"))
			}
		}
		spec.provide = provideRoute(func(cl *Client) *Analytics {
			a := &Analytics{route: route{cl, spec}, cfg: ac}
			a.static = staticSet(a.route, a.build)
			return a
		})
		c.routes = append(c.routes, spec)
	})
}

func (a Aggregate) validate() error {
	switch a.Agg {
	case AggCount, AggSum, AggAvg, AggMin, AggMax:
	default:
		return fmt.Errorf("unknown aggregate %q", a.Agg)
	}
	q := document.Query{Filters: a.Filters, OrderBy: a.GroupBy}
	if a.Agg != AggCount {
		q.Filters = append(slices.Clone(q.Filters), document.Filter{Field: a.Field, Op: document.Eq, Value: 0})
	}
	return q.Validate()
}

// Analytics runs the route's named queries for the bound tenant.
type Analytics struct {
	route
	cfg    AnalyticsConfig
	static *analyticsStmts
}

type analyticsStmts struct {
	sql
	stmts map[string]analyticsStmt
}

type analyticsStmt struct {
	text string
	args []any
}

// Row is one group of a result; Key is "" without GroupBy.
type Row struct {
	Key   string
	Value float64
}

func (a *Analytics) build(tenant tenancy.ID) *analyticsStmts {
	s := sql{tagged: a.spec.decision.Tagged}
	src := a.qualified(a.cfg.Source, tenant)
	out := &analyticsStmts{sql: s, stmts: map[string]analyticsStmt{}}
	for _, qn := range slices.Sorted(maps.Keys(a.cfg.Queries)) {
		q := a.cfg.Queries[qn]
		// Field names are [A-Za-z0-9_] (validated at wiring).
		agg := "pg_catalog.count(*)"
		if q.Agg != AggCount {
			agg = "pg_catalog." + string(q.Agg) + "((value->>'" + q.Field + "')::float8)"
		}
		key := "''"
		if q.GroupBy != "" {
			key = "coalesce(value->>'" + q.GroupBy + "', '')"
		}
		var b strings.Builder
		b.WriteString("SELECT " + key + ", coalesce(" + agg + ", 0)::float8 FROM " + src + " WHERE " + s.where() + "TRUE")
		var fargs []any
		n := 0
		if s.tagged {
			n = 1
		}
		for _, f := range q.Filters {
			v, _ := jsonValue(f.Value)
			fargs = append(fargs, jsonArg(v))
			fmt.Fprintf(&b, " AND value->'%s' %s $%d::jsonb", f.Field, f.Op, n+len(fargs))
		}
		if q.GroupBy != "" {
			b.WriteString(" GROUP BY 1 ORDER BY 1")
		}
		out.stmts[qn] = analyticsStmt{text: b.String(), args: fargs}
	}
	return out
}

// Run executes the named query.
func (a *Analytics) Run(ctx context.Context, name string) ([]Row, error) {
	ctx, tenant, pool, release, err := enter(ctx, a.route)
	if err != nil {
		return nil, err
	}
	defer release()
	st := cached(a.route, a.static, tenant, a.build)
	q, ok := st.stmts[name]
	if !ok {
		return nil, fmt.Errorf("postgres: analytics route %s has no query %q", a.spec.name, name)
	}
	rows, err := pool.Query(ctx, q.text, st.mode(args(st.tagged, tenant, q.args...))...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Row])
}

// jsonValue encodes a filter value as a jsonb parameter.
func jsonValue(v any) ([]byte, error) { return jsonMarshal(v) }
