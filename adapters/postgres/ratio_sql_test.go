package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
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
}
