package postgres_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRatioDeleteNotice: I3 (information), what the ownership gates' invalidation
// notice (gatesync.go) costs a delete: Documents.Delete, which sends it in
// its transaction, against the same DELETE written by hand without it,
// each after the same Create, from four goroutines at once (a notice takes
// a database-wide lock from its commit until the commit is flushed, so
// concurrent deletes are where it would cost).
func TestRatioDeleteNotice(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	run := unique()
	table := "dn_" + run
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)+"&pool_max_conns=8"),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(table), Write: naming.Shared(table)})), &d)
	provision(t, c, tenancytest.TenantA)
	pool, _, err := c.Pool(ctxA)
	must0(t, err)
	hand := "DELETE FROM " + pgx.Identifier{"public", table}.Sanitize() + " WHERE tenant_id = $1 AND id = $2"
	const workers = 4
	side := func(del func(id string) error) func(int) {
		return func(n int) {
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := w; i < n; i += workers {
						id := "k" + strconv.Itoa(i)
						if _, err := d.Create(ctxA, id, item{N: i}); err != nil {
							t.Error(err)
							return
						}
						if err := del(id); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		}
	}
	r := ratio.Inform(t, ratio.Pair{Label: "I3", Name: "pg-delete-with-gate-notice", Iterations: 600, Rounds: 11,
		Ours: side(func(id string) error { return d.Delete(ctxA, id) }),
		Baseline: side(func(id string) error {
			_, err := pool.Exec(context.Background(), hand, tenancytest.TenantA.Bytes(), id)
			return err
		})})
	r.PrintCost(os.Stdout)
}
