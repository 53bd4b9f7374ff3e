package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// via is how a test's modules reach PostgreSQL: directly, or through
// the test PgBouncer in transaction pooling mode.
type via struct {
	url  func(testing.TB) string
	opts []postgres.Option
	// login: a plain client's dynamic read logs in as the tenant's role,
	// which a transaction pooler needs (postgres_dynamic_read_pooled).
	login bool
}

var direct = via{url: testsvc.PostgresURL}

// throughPgBouncer is the test PgBouncer, which the module declares.
var throughPgBouncer = via{url: testsvc.PgBouncerURL, opts: []postgres.Option{postgres.BehindTransactionPooler()}, login: true}

// dsn is the module's connection option through v.
func (v via) dsn(t testing.TB) []postgres.Option {
	return append([]postgres.Option{postgres.Connect(v.url(t))}, v.opts...)
}

// twoDatabases creates one database per probe tenant and returns a
// resolver routing each tenant to its own.
func twoDatabases(t *testing.T) routing.Resolver { return twoDatabasesVia(t, direct) }

// twoDatabasesVia is twoDatabases, the resolver's DSNs reaching the
// databases through v.
func twoDatabasesVia(t *testing.T, v via) routing.Resolver {
	base := v.url(t)
	run := unique()
	conn := superuser(t)
	dsn := map[tenancy.ID]string{}
	for _, tn := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
		db := "tw_ded_" + run + "_" + tn.Hex()[:4]
		exec(t, conn, "CREATE DATABASE "+db)
		t.Cleanup(func() { exec(t, conn, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
		u, _ := url.Parse(base)
		u.Path = "/" + db
		dsn[tn] = u.String()
	}
	return func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
		if d, ok := dsn[tn]; ok {
			return routing.Credentials{Endpoint: d}, nil
		}
		return routing.Credentials{}, fmt.Errorf("unknown tenant %s", tn)
	}
}

type routeSet struct {
	docs    *postgres.Documents[item]
	counter *postgres.Counter
	search  *postgres.Search
	stats   *postgres.Analytics
	dyn     *postgres.DynamicRead
	client  *postgres.Client
	prefix  string
	table   string // the documents' table name
}

// tierRoutes starts every route kind at one tier and provisions A and B.
func tierRoutes(t *testing.T, tier tenancy.Tier) routeSet {
	var resolve routing.Resolver
	if tier == tenancy.Dedicated {
		resolve = twoDatabases(t)
	}
	return tierRoutesOn(t, direct, tier, resolve, nil)
}

// tierRoutesOn is tierRoutes through v, with the dedicated tier's
// databases given by resolve (nil below dedicated), and extra routes in
// the same module, filling extraTargets.
func tierRoutesOn(t *testing.T, v via, tier tenancy.Tier, resolve routing.Resolver, extra []postgres.Option, extraTargets ...any) routeSet {
	run := unique()
	prefix := "tw" + run + "_"
	rel := func(name string) naming.Name { return naming.Shared(name + "_" + run) }
	conn := v.dsn(t)
	tagged := tier == tenancy.Tagged
	switch tier {
	case tenancy.Namespace:
		rel = naming.PerTenant
	case tenancy.Dedicated:
		conn = append([]postgres.Option{postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 2}})}, v.opts...)
	}
	var rs routeSet
	rs.prefix, rs.table = prefix, rel("docs").Base()
	opts := append(conn, modules.RequiredIsolation(tier), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: tagged, Read: rel("docs"), Write: rel("docs")}),
		postgres.CounterRoute("counter", postgres.CounterConfig{TenantAware: tagged, Table: rel("counters")}),
		postgres.SearchRoute("search", postgres.SearchConfig{TenantAware: tagged, Read: rel("texts"), Heap: rel("texts"), Index: rel("texts_tsv")}),
		postgres.AnalyticsRoute("stats", postgres.AnalyticsConfig{TenantAware: tagged, Source: rel("docs"), Queries: map[string]postgres.Aggregate{
			"total":  {Agg: postgres.AggCount},
			"byName": {Agg: postgres.AggSum, Field: "n", GroupBy: "name"},
			"big":    {Agg: postgres.AggMax, Field: "n", Filters: []document.Filter{{Field: "n", Op: document.Gt, Value: 5}}},
		}}),
	)
	targets := []any{&rs.docs, named("counter", &rs.counter), named("search", &rs.search), named("stats", &rs.stats)}
	if tier >= tenancy.Namespace {
		dc := postgres.DynamicReadConfig{PerTenantSchema: tier == tenancy.Namespace, TenantRole: tier == tenancy.Namespace}
		if v.login && tier == tenancy.Namespace {
			dc.Login = &postgres.DynamicLogin{Secret: []byte(strings.Repeat("s", 32)), MaxClients: 2}
		}
		opts = append(opts, postgres.DynamicReadRoute("dyn", dc))
		targets = append(targets, named("dyn", &rs.dyn))
	}
	rs.client = start(t, postgres.Module("pg", append(opts, extra...)...), append(targets, extraTargets...)...)
	provision(t, rs.client, tenancytest.TenantA, tenancytest.TenantB)
	if tier == tenancy.Namespace {
		t.Cleanup(func() { teardown(t, rs.client, tenancytest.TenantA, tenancytest.TenantB) })
	}
	if tier == tenancy.Tagged {
		t.Cleanup(func() {
			// Teardown of a tagged tenant deletes its rows and only its rows.
			teardown(t, rs.client, tenancytest.TenantA)
			ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
			if n, err := rs.docs.Count(ctxA, document.Query{}); err != nil || n != 0 {
				t.Errorf("after teardown A still has %d documents (%v)", n, err)
			}
			if n, err := rs.search.Count(ctxA, "zebra"); err != nil || n != 0 {
				t.Errorf("after teardown A still has %d texts (%v)", n, err)
			}
		})
	}
	return rs
}

var tiers = []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}

func TestRouteBoundaries(t *testing.T) { routeBoundaries(t, direct) }

// TestRouteBoundariesThroughPgBouncer runs the boundary probes of every
// core route kind at every tier through PgBouncer in transaction pooling
// mode.
func TestRouteBoundariesThroughPgBouncer(t *testing.T) { routeBoundaries(t, throughPgBouncer) }

func routeBoundaries(t *testing.T, v via) {
	for _, tier := range tiers {
		t.Run(tier.String(), func(t *testing.T) {
			var resolve routing.Resolver
			if tier == tenancy.Dedicated {
				resolve = twoDatabasesVia(t, v)
			}
			rs := tierRoutesOn(t, v, tier, resolve, nil)
			t.Run("document", func(t *testing.T) { tenancytest.Boundary(t, docProbe(t, rs.docs)) })
			t.Run("counter", func(t *testing.T) { tenancytest.Boundary(t, counterProbe(rs.counter)) })
			t.Run("search", func(t *testing.T) { tenancytest.Boundary(t, searchProbe(t, rs.search)) })
			t.Run("analytics", func(t *testing.T) { analyticsBoundary(t, rs) })
			if rs.dyn != nil {
				t.Run("dynamic_read", func(t *testing.T) { dynamicBoundary(t, rs, tier) })
			}
		})
	}
}

func counterProbe(k *postgres.Counter) tenancytest.Probe {
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { _, err := k.Add(ctx, "hits", 1); return err },
		Read: func(ctx context.Context) (bool, error) {
			v, err := k.Get(ctx, "hits")
			return v > 0, err
		},
		Intact: func(ctx context.Context) (bool, error) {
			v, err := k.Get(ctx, "hits")
			return v == 1, err
		},
		// B's increment lands on B's own counter; A's must not move.
		Update: func(ctx context.Context) error {
			if v, err := k.Add(ctx, "hits", 5); err != nil || v != 5 {
				return fmt.Errorf("B's add saw %d (%v)", v, err)
			}
			return errors.New("separate counter")
		},
		Delete: func(ctx context.Context) error {
			if _, err := k.Delete(ctx, "hits"); err != nil {
				return err
			}
			// B's own counter is gone: A's must remain, unseen.
			if deleted, err := k.Delete(ctx, "hits"); err != nil || deleted {
				return err
			}
			return document.ErrNotFound
		},
	}
}

func searchProbe(t *testing.T, x *postgres.Search) tenancytest.Probe {
	ids := func(ctx context.Context) ([]string, error) {
		hits, err := x.Search(ctx, "zebra quantum", 10)
		var out []string
		for _, h := range hits {
			out = append(out, h.ID)
		}
		return out, err
	}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { return x.Put(ctx, "s1", "a zebra studies quantum physics") },
		Read: func(ctx context.Context) (bool, error) {
			got, err := ids(ctx)
			return slices.Contains(got, "s1"), err
		},
		List: ids, RecordID: "s1",
		Search: func(ctx context.Context) (int, error) { return x.Count(ctx, "zebra") },
		Delete: func(ctx context.Context) error {
			if err := x.Remove(ctx, "s1"); !errors.Is(err, document.ErrNotFound) {
				t.Errorf("remove under B: %v", err)
			}
			return errors.New("refused")
		},
	}
}

// analyticsProbe writes three documents and aggregates them.
func analyticsProbe(rs routeSet) tenancytest.Probe {
	total := func(ctx context.Context) (int, error) {
		rows, err := rs.stats.Run(ctx, "big")
		if err != nil || len(rows) != 1 {
			return 0, err
		}
		return int(rows[0].Value), nil
	}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error {
			for i, n := range []int{2, 7, 9} {
				if _, err := rs.docs.Create(ctx, fmt.Sprint("an", i), item{Name: fmt.Sprint("g", i%2), N: n}); err != nil {
					return err
				}
			}
			return nil
		},
		Read: func(ctx context.Context) (bool, error) {
			n, err := total(ctx)
			return n > 0, err
		},
		Count: total,
	}
}

func analyticsBoundary(t *testing.T, rs routeSet) {
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	tenancytest.Boundary(t, analyticsProbe(rs))
	rows, err := rs.stats.Run(ctxA, "byName")
	if err != nil || len(rows) < 2 || rows[0].Key != "g0" || rows[0].Value != 11 || rows[1].Key != "g1" {
		t.Errorf("byName: %v %v", rows, err)
	}
	if _, err := rs.stats.Run(ctxA, "nope"); err == nil {
		t.Error("unknown query ran")
	}
}

// dynamicProbe writes a document and reads it back through runtime SQL.
func dynamicProbe(rs routeSet, tier tenancy.Tier) tenancytest.Probe {
	own := func(ctx context.Context) (int, error) {
		s := ""
		if tier == tenancy.Namespace {
			var err error
			if s, err = rs.dyn.Schema(ctx); err != nil {
				return 0, err
			}
		}
		return dynCount(ctx, rs, s)
	}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { _, err := rs.docs.Create(ctx, "dyn1", item{}); return err },
		Read: func(ctx context.Context) (bool, error) {
			n, err := own(ctx)
			return n > 0, err
		},
	}
}

// dynCount counts the document dyn1 through runtime SQL on table, in
// schema when not empty.
func dynCount(ctx context.Context, rs routeSet, schema string) (int, error) {
	var n int
	table := rs.table
	if schema != "" {
		table = schema + "." + rs.table
	}
	err := rs.dyn.Query(ctx, "SELECT count(*) FROM "+table+" WHERE id = $1", []any{"dyn1"}, func(r pgx.Rows) error {
		for r.Next() {
			if err := r.Scan(&n); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

func dynamicBoundary(t *testing.T, rs routeSet, tier tenancy.Tier) {
	tenancytest.Boundary(t, dynamicProbe(rs, tier))
	count := func(ctx context.Context, schema string) (int, error) { return dynCount(ctx, rs, schema) }
	if tier != tenancy.Namespace {
		return
	}
	// Compiled text naming A's schema, run by B, is refused by the server.
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	schemaA, _ := rs.dyn.Schema(ctxA)
	if _, err := count(ctxB, schemaA); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("B read A's schema through compiled text: %v", err)
	}
	// Writes are refused too: the transaction is read-only.
	err := rs.dyn.Query(ctxA, "DELETE FROM "+schemaA+".docs", nil, func(pgx.Rows) error { return nil })
	if err == nil {
		t.Error("a dynamic read deleted rows")
	}
	if n, err := count(ctxA, schemaA); err != nil || n != 1 {
		t.Errorf("A's own read: %d %v", n, err)
	}
}

func TestRoutesFailClosed(t *testing.T) {
	rs := tierRoutes(t, tenancy.Namespace)
	ctx := context.Background()
	_, e1 := rs.counter.Add(ctx, "x", 1)
	_, e2 := rs.search.Search(ctx, "x", 1)
	_, e3 := rs.stats.Run(ctx, "total")
	e4 := rs.dyn.Query(ctx, "SELECT 1", nil, func(pgx.Rows) error { return nil })
	_, e5 := rs.dyn.Schema(ctx)
	for i, err := range []error{e1, e2, e3, e4, e5, rs.search.Put(ctx, "x", "y")} {
		route := []string{"counter", "search", "stats", "dyn", "dyn", "search"}[i]
		tenancytest.RequireUnbound(t, err, "pg", "postgres", route)
	}
}

func TestDynamicReadWiring(t *testing.T) {
	dyn := func(dc postgres.DynamicReadConfig) postgres.Option { return postgres.DynamicReadRoute("dyn", dc) }
	tenancytest.RequireRefused(t, postgres.CodeDynamicReadUnconfined,
		postgres.Module("pg", postgres.Connect(nowhere), dyn(postgres.DynamicReadConfig{PerTenantSchema: true})))
	tenancytest.RequireRefused(t, tenancy.CodeStatementOriginFloor,
		postgres.Module("pg", postgres.Connect(nowhere), dyn(postgres.DynamicReadConfig{TenantRole: true})))
	tenancytest.RequireRefused(t, tenancy.CodeStatementOriginFloor,
		postgres.Module("pg", postgres.Connect(nowhere), dyn(postgres.DynamicReadConfig{})))
	tenancytest.RequireWires(t, postgres.Module("pg", postgres.Connect(nowhere), modules.RequiredIsolation(tenancy.Namespace),
		dyn(postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true})))
	tenancytest.RequireWires(t, postgres.Module("pg", postgres.Routed(resolveNowhere, postgres.RoutedConfig{}), dyn(postgres.DynamicReadConfig{})))
	// An index lives in its table's schema: a static index on a per-tenant
	// heap cannot exist, and is refused as such.
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		postgres.Module("pg", postgres.Connect(nowhere), modules.RequiredIsolation(tenancy.Namespace),
			postgres.SearchRoute("s", postgres.SearchConfig{Read: naming.PerTenant("t"), Heap: naming.PerTenant("t"), Index: naming.Shared("t_idx")})))
	// The rule itself counts the index.
	rule := postgres.Rules().Kinds["search"]
	r := floors.Route{Kind: "search", Relations: []floors.Relation{
		{Role: "read", PerTenant: true}, {Role: "heap", PerTenant: true}, {Role: "index"}}}
	if got := floors.Reach(rule, r); got != tenancy.None {
		t.Errorf("search with a static index reaches %s", got)
	}
	// Outbox-like kinds count their resolver only when tenant-aware.
	ob := floors.Route{Kind: "outbox", Relations: []floors.Relation{{Role: "table", PerTenant: true}}}
	if got := floors.Reach(postgres.Rules().Kinds["outbox"], ob); got != tenancy.None {
		t.Errorf("outbox without TenantAware reaches %s", got)
	}
	ob.TenantAware = true
	if got := floors.Reach(postgres.Rules().Kinds["outbox"], ob); got != tenancy.Namespace {
		t.Errorf("tenant-aware per-tenant outbox reaches %s", got)
	}
	hub := floors.Route{Kind: "hub_search", TenantAware: true, Relations: []floors.Relation{{Role: "hub", PerTenant: true}}}
	if got := floors.Reach(postgres.Rules().Kinds["hub_search"], hub); got != tenancy.Tagged {
		t.Errorf("hub search reaches %s", got)
	}
}
