package postgres_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRatioSQL: P15, the SQL route at one tenant (its login pool warm)
// against the same hand-written pgx statement on the tenant's
// schema-qualified table, same server, a pool of the module's user.
func TestRatioSQL(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	_, own, prefix := startSQL(t, direct, nil)
	pool, err := pgxpool.New(context.Background(), testsvc.PostgresURL(t))
	must0(t, err)
	t.Cleanup(pool.Close)
	items := pgx.Identifier{postgres.SchemaName(prefix, tenancytest.TenantA), "items"}.Sanitize()
	for i := range ratioIters {
		_, err := own.Exec(ctxA, "INSERT INTO items (id, v) VALUES ($1, 'x') ON CONFLICT DO NOTHING", int64(10+i))
		must0(t, err)
	}
	read := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}, sql string) func(int) {
		return func(n int) {
			for i := range n {
				var v string
				must0(t, q.QueryRow(ctxA, sql, int64(10+i%ratioIters)).Scan(&v))
			}
		}
	}
	ratio.Report(t, ratio.Pair{Label: "P15", Name: "sql-read", Iterations: ratioIters, Rounds: ratioRounds,
		Ours: read(own, "SELECT v FROM items WHERE id = $1"), Baseline: read(pool, "SELECT v FROM "+items+" WHERE id = $1")}, 1.10)
	next := int64(1_000_000)
	insert := func(exec func(context.Context, string, ...any) error, sql string) func(int) {
		return func(n int) {
			for range n {
				next++
				must0(t, exec(ctxA, sql, next))
			}
		}
	}
	ownExec := func(ctx context.Context, sql string, a ...any) error { _, err := own.Exec(ctx, sql, a...); return err }
	poolExec := func(ctx context.Context, sql string, a ...any) error { _, err := pool.Exec(ctx, sql, a...); return err }
	ratio.Report(t, ratio.Pair{Label: "P15", Name: "sql-insert", Iterations: ratioIters, Rounds: ratioRounds,
		Ours: insert(ownExec, "INSERT INTO items (id, v) VALUES ($1, 'y')"), Baseline: insert(poolExec, "INSERT INTO "+items+" (id, v) VALUES ($1, 'y')")}, 1.10)
	// From 64 goroutines: the tenant's login pool (SQLConfig.MaxConns, 4)
	// against a hand-written pool of as many connections.
	pool4, err := pgxpool.New(context.Background(), testsvc.PostgresURL(t)+"&pool_max_conns=4")
	must0(t, err)
	t.Cleanup(pool4.Close)
	get := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}, sql string) func(int) error {
		return func(i int) error {
			var v string
			return q.QueryRow(ctxA, sql, int64(10+i%ratioIters)).Scan(&v)
		}
	}
	ratio.ReportParallel(t, ratio.Pair{Label: "P15", Name: "sql-read-g64", Iterations: concIters, Rounds: concRounds, Cap: concCap,
		Ours:     ratio.ParallelSide(t, 64, ratioIters, get(own, "SELECT v FROM items WHERE id = $1")),
		Baseline: ratio.ParallelSide(t, 64, ratioIters, get(pool4, "SELECT v FROM "+items+" WHERE id = $1"))}, 1.10, 5*concIters)
}

// sqlRatioTenants is how many tenants TestRatioSQLTenants cycles over
// (TENANTWIRE_SQL_TENANTS, default 1,000).
func sqlRatioTenants(t *testing.T) int {
	n := 1000
	if s := os.Getenv("TENANTWIRE_SQL_TENANTS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("TENANTWIRE_SQL_TENANTS=%q: want a positive count", s)
		}
		n = v
	}
	return n
}

// TestRatioSQLTenants: P15 at many tenants, a SQL-route point read cycling
// over 1,000 tenants from one goroutine and from 64, against the same
// statement by hand on each tenant's schema-qualified table. The route's
// login pools (Login.MaxClients 16 of 2 connections: 32 of the server's
// 100) hold the most recently active tenants; past them a call logs in
// anew, which this pair prices.
func TestRatioSQLTenants(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	n := sqlRatioTenants(t)
	prefix := "tw" + unique() + "_"
	var own *postgres.SQL
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)+"&pool_max_conns=8"), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		modules.Migrations(sqlSteps),
		postgres.SQLRoute("own", postgres.SQLConfig{Origin: tenancy.Compiled, MaxConns: 2, Login: &postgres.DynamicLogin{Secret: loginSecret, MaxClients: 16}})),
		named("own", &own))
	tenants := make([]tenancy.ID, n)
	ctxs := make([]context.Context, n)
	stmts := make([]string, n)
	for i := range tenants {
		tenants[i] = scaleTenant(i)
		ctxs[i] = tenancy.WithTenant(context.Background(), tenants[i])
		stmts[i] = "SELECT v FROM " + pgx.Identifier{postgres.SchemaName(prefix, tenants[i]), "items"}.Sanitize() + " WHERE id = $1"
	}
	provisionAll(t, c, tenants)
	t.Cleanup(func() { teardown(t, c, tenants...) })
	pool, err := pgxpool.New(context.Background(), testsvc.PostgresURL(t)+"&pool_max_conns=8")
	must0(t, err)
	t.Cleanup(pool.Close)
	for i := range tenants {
		_, err := pool.Exec(context.Background(), "INSERT INTO "+pgx.Identifier{postgres.SchemaName(prefix, tenants[i]), "items"}.Sanitize()+" (id, v) VALUES (1, 'x')")
		must0(t, err)
	}
	ours := func(i int) error {
		var v string
		return own.QueryRow(ctxs[i], "SELECT v FROM items WHERE id = $1", int64(1)).Scan(&v)
	}
	hand := func(i int) error {
		var v string
		return pool.QueryRow(ctxs[i], stmts[i], int64(1)).Scan(&v)
	}
	name := "sql-read-" + strconv.Itoa(n)
	ratio.Report(t, ratio.Pair{Label: "P15", Name: name, Iterations: ratioIters, Rounds: ratioRounds, Cap: concCap,
		Ours: ratio.ParallelSide(t, 1, n, ours), Baseline: ratio.ParallelSide(t, 1, n, hand)}, 1.10)
	ratio.ReportParallel(t, ratio.Pair{Label: "P15", Name: name + "-g64", Iterations: concIters, Rounds: concRounds, Cap: concCap,
		Ours: ratio.ParallelSide(t, 64, n, ours), Baseline: ratio.ParallelSide(t, 64, n, hand)}, 1.10, 5*concIters)
}
