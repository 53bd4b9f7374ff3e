package postgres_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// scaleTagged is the tagged table of the scale pairs: fixed, seeded once
// with one record per tenant (ON CONFLICT DO NOTHING makes a rerun cheap).
const scaleTagged = "twscale_tagged"

// TestRatioScaleTagged: a tagged point read cycling over 10,000 tenants
// whose rows share one table, vs the hand-written predicate on the same
// pool; and the route's cost per read there vs reading one tenant's row.
func TestRatioScaleTagged(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	const tenants = 10000
	d, ctxs, pool := scaleTaggedFixture(t, tenants, 1)
	// Each side walks on through the tenants from round to round, so the
	// rounds read every tenant's row.
	read := func(over int) func(int) {
		next := ratio.Cycle(over)
		return func(n int) {
			for range n {
				if _, err := d.Get(ctxs[next()], "k"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	stmt := "SELECT version, value FROM " + scaleTagged + " WHERE tenant_id = $1 AND id = $2"
	handNext := ratio.Cycle(tenants)
	hand := func(n int) {
		for range n {
			i := handNext()
			tn, _ := tenancy.Require(ctxs[i])
			var v int64
			var raw []byte
			must0(t, pool.QueryRow(ctxs[i], stmt, tn.Bytes(), "k").Scan(&v, &raw))
			decode(t, raw)
		}
	}
	read(tenants)(tenants)
	hand(tenants)
	label := "S" + strconv.Itoa(tenants)
	ratio.ReportScale(t, ratio.Pair{Label: label, Name: "pg-tagged-get-vs-hand", Iterations: ratioIters, Rounds: ratioRounds, Ours: read(tenants), Baseline: hand}, 1.05)
	ratio.ReportScale(t, ratio.Pair{Label: label, Name: "pg-tagged-get-vs-1-tenant", Iterations: ratioIters, Rounds: ratioRounds, Ours: read(tenants), Baseline: read(1)}, 1.2)
}

// TestRatioScaleHeap: the client's Go heap after a fresh module has served
// 1, 1,000 and 10,000 namespace tenants (a read each, and an ownership
// gate check each), and the ratio of the growth at 10,000 to the growth at
// 1,000 (target ≤ 2: every per-tenant cache is bounded).
func TestRatioScaleHeap(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	counts := scaleCounts(t)
	growth := map[int]uint64{}
	for _, n := range counts {
		f := newScaleFleet(t, n)
		pool, _ := scalePool(t)
		var d *postgres.Documents[item]
		c := start(t, scaleModule(pool), &d)
		g := c.Ownership(postgres.OwnershipConfig{Table: naming.PerTenant("docs")})
		before := heap()
		for _, ctx := range f.ctxs {
			if _, err := d.Get(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			must0(t, g.Check(ctx, "k"))
		}
		after := heap()
		growth[n] = after - min(before, after)
		fmt.Fprintf(os.Stdout, "scale heap tenants=%d bytes=%d growth=%d\n", n, after, growth[n])
		t.Logf("after serving %d tenants: heap %d bytes, %d more than before (%d cached statement sets, %d gate entries)", n, after, growth[n], postgres.CachedStatementSets(c), g.Len())
		runtime.KeepAlive(d)
	}
	// No growth at 10,000 (the heap after no larger than before) meets the
	// target and is reported as 0, not left out.
	if g10, ok := growth[10000]; ok && growth[1000] > 0 {
		g1 := growth[1000]
		r := float64(g10) / float64(g1)
		fmt.Fprintf(os.Stdout, "ratio S10000-heap-growth-vs-S1000 %.2f\n", r)
		verdict := "meets"
		if r > 2 {
			verdict = "MISSES"
		}
		t.Logf("heap growth at 10,000 tenants / at 1,000: %.2f; %s target <= 2", r, verdict)
	}
}

// heap is the live heap after a full collection.
func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// scaleTaggedFixture is a tagged document route over the scale pairs'
// shared table on a pool of conns, a row "k" for each of tenants tenants
// (scaleTenant(i) is 00000000-0000-4000-9000-<i+1 in 12 hex digits>), a
// context bound to each, and the module's pool for the hand-written side.
func scaleTaggedFixture(t *testing.T, tenants, conns int) (*postgres.Documents[item], []context.Context, *pgxpool.Pool) {
	t.Helper()
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)+"&pool_max_conns="+strconv.Itoa(conns)),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(scaleTagged), Write: naming.Shared(scaleTagged)})), &d)
	provision(t, c, scaleTenant(0))
	conn := superuser(t)
	exec(t, conn, `INSERT INTO `+scaleTagged+` (tenant_id, id, version, value)
		SELECT ('00000000-0000-4000-9000-' || pg_catalog.lpad(pg_catalog.to_hex(g), 12, '0'))::uuid, 'k', 1, '{"name":"bench","n":1}'
		FROM pg_catalog.generate_series(1, $1::int) g ON CONFLICT DO NOTHING`, tenants)
	exec(t, conn, "ANALYZE "+scaleTagged)
	ctxs := make([]context.Context, tenants)
	for i := range ctxs {
		ctxs[i] = tenancy.WithTenant(context.Background(), scaleTenant(i))
	}
	pool, _, err := c.Pool(ctxs[0])
	must0(t, err)
	return d, ctxs, pool
}
