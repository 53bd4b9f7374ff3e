package postgres_test

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRatioNamespaceThroughPgBouncer: P12, the namespace point read behind
// PgBouncer in transaction pooling mode (BehindTransactionPooler: the
// module's pool in cache_describe) vs the hand-written schema-qualified
// read on the same pool through the same pooler; and, as information, the
// same read directly against PostgreSQL (prepared), which is what the
// pooler itself costs.
func TestRatioNamespaceThroughPgBouncer(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	run := unique()
	prefix := "tw" + run + "_"
	docs := postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})
	var d, direct *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PgBouncerURL(t)), postgres.BehindTransactionPooler(),
		postgres.SchemaPrefix(prefix), modules.AllowTeardown(), docs), &d)
	start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix), docs), &direct)
	provision(t, c, tenancytest.TenantA)
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA) })
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	must0(t, seed(ctx, d))
	pool, _, err := c.Pool(ctx)
	must0(t, err)
	get := func(d *postgres.Documents[item]) func(int) {
		return func(n int) {
			for i := range n {
				if _, err := d.Get(ctx, key(i)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	ratio.Report(t, ratio.Pair{Label: "P12", Name: "pg-namespace-pgbouncer", Iterations: ratioIters, Rounds: ratioRounds, Ours: get(d), Baseline: func(n int) {
		for i := range n {
			tn, _ := tenancy.Require(ctx)
			stmt := "SELECT version, value FROM " + postgres.SchemaName(prefix, tn) + ".docs WHERE id = $1"
			var v int64
			var raw []byte
			must0(t, pool.QueryRow(ctx, stmt, key(i)).Scan(&v, &raw))
			decode(t, raw)
		}
	}}, 1.05)
	r := ratio.Inform(t, ratio.Pair{Label: "P12", Name: "pg-namespace-pgbouncer-vs-direct", Iterations: ratioIters, Rounds: ratioRounds, Ours: get(d), Baseline: get(direct)})
	t.Logf("a point read: %.0f µs through the pooler, %.0f µs directly", r.OursNs/1e3, r.BaseNs/1e3)
}
