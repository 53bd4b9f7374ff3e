package postgres_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// rowSecuredSide is one side of the row-security pairs: a tagged document
// and counter route over tables of its own, with one row per tenant.
type rowSecuredSide struct {
	d *postgres.Documents[item]
	k *postgres.Counter
}

func rowSecuredFixture(t *testing.T, tenants int, guarded bool) rowSecuredSide {
	t.Helper()
	run := unique()
	opts := []postgres.Option{postgres.Connect(testsvc.PostgresURL(t) + "&pool_max_conns=" + strconv.Itoa(concConns)), postgres.SchemaPrefix("t" + run + "_"),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("rlsb_" + run)}),
		postgres.CounterRoute("hits", postgres.CounterConfig{TenantAware: true, Table: naming.Shared("rlsk_" + run)})}
	if guarded {
		opts = append(opts, postgres.RowSecurity())
	}
	var s rowSecuredSide
	c := start(t, postgres.Module("pg", opts...), &s.d, named("hits", &s.k))
	provision(t, c, scaleTenant(0))
	conn := superuser(t)
	exec(t, conn, `INSERT INTO rlsb_`+run+` (tenant_id, id, version, value)
		SELECT ('00000000-0000-4000-9000-' || pg_catalog.lpad(pg_catalog.to_hex(g), 12, '0'))::uuid, 'k', 1, '{"name":"bench","n":1}'
		FROM pg_catalog.generate_series(1, $1::int) g ON CONFLICT DO NOTHING`, tenants)
	exec(t, conn, "ANALYZE rlsb_"+run)
	return s
}

// TestRatioRowSecurity: P15, a tagged route under RowSecurity against the
// same route without it (plain tagged), each on a pool of its own of the
// same size: a point read and a counter increment, at 1 and 1,000
// tenants, from one goroutine and from 64.
func TestRatioRowSecurity(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	for _, tenants := range []int{1, 1000} {
		t.Run(strconv.Itoa(tenants), func(t *testing.T) {
			plain, guarded := rowSecuredFixture(t, tenants, false), rowSecuredFixture(t, tenants, true)
			ctxs := make([]context.Context, tenants)
			for i := range ctxs {
				ctxs[i] = tenancy.WithTenant(context.Background(), scaleTenant(i))
			}
			get := func(s rowSecuredSide) func(int) error {
				return func(i int) error { _, err := s.d.Get(ctxs[i], "k"); return err }
			}
			add := func(s rowSecuredSide) func(int) error {
				return func(i int) error { _, err := s.k.Add(ctxs[i], "c", 1); return err }
			}
			for _, op := range []struct {
				name        string
				ours, plain func(int) error
			}{{"rls-get", get(guarded), get(plain)}, {"rls-add", add(guarded), add(plain)}} {
				for i := range tenants {
					must0(t, op.ours(i))
					must0(t, op.plain(i))
				}
				name := op.name + "-" + strconv.Itoa(tenants)
				ratio.Report(t, ratio.Pair{Label: "P15", Name: name, Iterations: ratioIters, Rounds: ratioRounds,
					Ours: ratio.ParallelSide(t, 1, tenants, op.ours), Baseline: ratio.ParallelSide(t, 1, tenants, op.plain)}, 1.10)
				ratio.ReportParallel(t, ratio.Pair{Label: "P15", Name: name + "-g64", Iterations: concIters, Rounds: concRounds, Cap: concCap,
					Ours: ratio.ParallelSide(t, 64, tenants, op.ours), Baseline: ratio.ParallelSide(t, 64, tenants, op.plain)}, 1.10, 5*concIters)
			}
		})
	}
}
