package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// archiveRows is the tenant's size in the P16 pair: 100,000 rows by
// default (TENANTWIRE_ARCHIVE_ROWS, for the 1,000,000 of the target).
func archiveRows() int {
	if n, err := strconv.Atoi(os.Getenv("TENANTWIRE_ARCHIVE_ROWS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// TestRatioArchiveExport: P16, a tenant's export of its rows of a tagged
// table vs the hand-written COPY (SELECT … WHERE tenant) TO STDOUT of the
// same rows, its import vs COPY FROM, and the export's peak heap.
func TestRatioArchiveExport(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	run := unique()
	rows := archiveRows()
	tagged := "p16_" + run
	var tenants *modules.Tenants
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"),
		postgres.Document[item]("tagged", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(tagged)})),
		modules.Lifecycle(), fx.Populate(&tenants))
	startApp(t, app)
	a := tenancytest.FreshTenant(t)
	provision(t, c, a)
	db := superuser(t)
	ctx := context.Background()
	exec(t, db, "INSERT INTO "+tagged+" (tenant_id, id, version, value) SELECT '"+a.String()+"', 'k' || i, 1, jsonb_build_object('name', 'item ' || i, 'n', i) FROM generate_series(1, "+strconv.Itoa(rows)+") i")
	exec(t, db, "ANALYZE "+tagged)
	pool, _, err := c.Pool(ctx)
	must0(t, err)
	copySQL := "COPY (SELECT * FROM " + tagged + " WHERE tenant_id = '" + a.String() + "') TO STDOUT"
	ratio.Report(t, ratio.Pair{Label: "P16", Name: "pg-export-tagged-" + strconv.Itoa(rows), Iterations: 1, Rounds: 5,
		Ours: func(n int) {
			for range n {
				must0(t, tenants.Export(ctx, a, io.Discard))
			}
		},
		Baseline: func(n int) {
			for range n {
				conn, err := pool.Acquire(ctx)
				must0(t, err)
				_, err = conn.Conn().PgConn().CopyTo(ctx, io.Discard, copySQL)
				conn.Release()
				must0(t, err)
			}
		}}, 1.25)

	// Import into a fresh tenant vs COPY FROM of the same rows (the
	// hand-written COPY's text, its tenant rewritten) into a table of the
	// same shape: both tables grow by a tenant a round.
	archive := &bytes.Buffer{}
	must0(t, tenants.Export(ctx, a, archive))
	var copied bytes.Buffer
	conn, err := pool.Acquire(ctx)
	must0(t, err)
	_, err = conn.Conn().PgConn().CopyTo(ctx, &copied, copySQL)
	conn.Release()
	must0(t, err)
	hand := "p16in_" + run
	exec(t, db, "CREATE TABLE "+hand+" (LIKE "+tagged+" INCLUDING ALL)")
	ratio.Report(t, ratio.Pair{Label: "P16", Name: "pg-import-tagged-" + strconv.Itoa(rows), Iterations: 1, Rounds: 5,
		Ours: func(n int) {
			for range n {
				id := tenancytest.FreshTenant(t)
				provision(t, c, id)
				must0(t, tenants.Import(ctx, id, bytes.NewReader(archive.Bytes())))
			}
		},
		Baseline: func(n int) {
			for range n {
				data := bytes.ReplaceAll(copied.Bytes(), []byte(a.String()), []byte(tenancytest.FreshTenant(t).String()))
				conn, err := pool.Acquire(ctx)
				must0(t, err)
				_, err = conn.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(data), "COPY "+hand+" FROM STDIN")
				conn.Release()
				must0(t, err)
			}
		}}, 1.25)

	// The heap while exporting: the peak seen every 256 KB written, for a
	// tenant of a tenth of the rows and for this one.
	small := tenancytest.FreshTenant(t)
	provision(t, c, small)
	exec(t, db, "INSERT INTO "+tagged+" (tenant_id, id, version, value) SELECT '"+small.String()+"', 'k' || i, 1, jsonb_build_object('name', 'item ' || i, 'n', i) FROM generate_series(1, "+strconv.Itoa(rows/10)+") i")
	peak := func(id tenancy.ID) (uint64, uint64) {
		runtime.GC()
		w := &heapWatch{}
		must0(t, tenants.Export(ctx, id, w))
		return w.peak, w.live
	}
	hs, ls := peak(small)
	hl, ll := peak(a)
	fmt.Printf("heap P16-pg-export %d rows %.1f MB, %d rows %.1f MB, ratio %.2f\n", rows/10, float64(hs)/1e6, rows, float64(hl)/1e6, float64(hl)/float64(hs))
	fmt.Printf("heap P16-pg-export-live %d rows %.2f MB, %d rows %.2f MB, ratio %.2f\n", rows/10, float64(ls)/1e6, rows, float64(ll)/1e6, float64(ll)/float64(ls))
}

// heapWatch discards what is written and samples the heap every 256 KB
// (peak: what is allocated, garbage included, so it follows the
// collector's timing as much as the export), and the live heap after a
// collection every 512 KB (live: what the export holds).
type heapWatch struct {
	n, m       int
	peak, live uint64
}

func (w *heapWatch) Write(p []byte) (int, error) {
	w.m += len(p)
	if w.n += len(p); w.n >= 256<<10 {
		w.n = 0
		var m runtime.MemStats
		if w.m >= 512<<10 {
			w.m = 0
			runtime.GC()
			runtime.ReadMemStats(&m)
			w.live = max(w.live, m.HeapAlloc)
		}
		runtime.ReadMemStats(&m)
		w.peak = max(w.peak, m.HeapAlloc)
	}
	return len(p), nil
}
