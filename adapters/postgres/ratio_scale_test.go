package postgres_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioScaleNamespace: S<N>, a namespace point read cycling over N
// tenants vs SET search_path per checkout and vs the hand-written
// schema-qualified statement in pgx's exec mode, each on its own
// one-connection pool. TENANTWIRE_SCALE_TENANTS lists the N (default
// "1,1000").
func TestRatioScaleNamespace(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	counts := []int{1, 1000}
	if s := os.Getenv("TENANTWIRE_SCALE_TENANTS"); s != "" {
		counts = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			must0(t, err)
			counts = append(counts, n)
		}
	}
	for _, n := range counts {
		t.Run(strconv.Itoa(n), func(t *testing.T) { scaleNamespace(t, n) })
	}
}

func scaleNamespace(t *testing.T, tenants int) {
	prefix := "tw" + unique() + "_"
	pool, writes := countedPool(t)
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Pool(pool), postgres.SchemaPrefix(prefix), postgres.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: postgres.SchemaPerTenant("docs"), Write: postgres.SchemaPerTenant("docs")})), &d)
	ids := make([]tenancy.ID, tenants)
	ctxs := make([]context.Context, tenants)
	schemas := make([]string, tenants)
	for i := range ids {
		ids[i] = scaleTenant(i)
		ctxs[i] = tenancy.WithTenant(context.Background(), ids[i])
		schemas[i] = postgres.SchemaName(prefix, ids[i])
	}
	began := time.Now()
	parallel(t, tenants, func(i int) error { return c.Provision(context.Background(), ids[i]) })
	t.Logf("provisioned %d tenants in %v", tenants, time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		began := time.Now()
		parallel(t, tenants, func(i int) error { return c.Teardown(context.Background(), ids[i]) })
		t.Logf("tore down %d tenants in %v", tenants, time.Since(began).Round(time.Millisecond))
	})
	for i := range ids {
		_, err := d.Create(ctxs[i], "k", item{Name: "bench", N: i})
		must0(t, err)
	}
	ours := func(n int) {
		for i := range n {
			if _, err := d.Get(ctxs[i%tenants], "k"); err != nil {
				t.Fatal(err)
			}
		}
	}
	ours(tenants) // every tenant warm: what a busy service sees
	before := writes.Load()
	ours(tenants)
	t.Logf("ours: %.2f round trips per read over %d tenants", float64(writes.Load()-before)/float64(tenants), tenants)

	handPool, _ := countedPool(t)
	hand := func(n int) {
		for i := range n {
			ctx := ctxs[i%tenants]
			tn, _ := tenancy.Require(ctx)
			stmt := "SELECT version, value FROM " + postgres.SchemaName(prefix, tn) + ".docs WHERE id = $1"
			var v int64
			var raw []byte
			must0(t, handPool.QueryRow(ctx, stmt, pgx.QueryExecModeExec, "k").Scan(&v, &raw))
			decode(t, raw)
		}
	}
	pathPool, _ := countedPool(t)
	searchPath := func(n int) {
		for i := range n {
			ctx := ctxs[i%tenants]
			tn, _ := tenancy.Require(ctx)
			conn, err := pathPool.Acquire(ctx)
			must0(t, err)
			_, err = conn.Exec(ctx, "SET search_path TO "+postgres.SchemaName(prefix, tn))
			must0(t, err)
			var v int64
			var raw []byte
			must0(t, conn.QueryRow(ctx, "SELECT version, value FROM docs WHERE id = $1", "k").Scan(&v, &raw))
			conn.Release()
			decode(t, raw)
		}
	}
	hand(tenants)
	searchPath(tenants)
	label := "S" + strconv.Itoa(tenants)
	ratio.Report(t, ratio.Pair{Label: label, Name: "pg-namespace-get-vs-search-path", Iterations: ratioIters, Rounds: ratioRounds, Ours: ours, Baseline: searchPath}, 0.70)
	ratio.Report(t, ratio.Pair{Label: label, Name: "pg-namespace-get-vs-hand", Iterations: ratioIters, Rounds: ratioRounds, Ours: ours, Baseline: hand}, 1.05)
}

// parallel runs f(0..n-1) on a few workers: provisioning is DDL, bound by
// the server's round trips more than its cores.
func parallel(t *testing.T, n int, f func(int) error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					first = firstErr(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	must0(t, first)
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
