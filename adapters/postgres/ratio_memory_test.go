package postgres_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// memoryBound is the most server memory one connection of a module's own
// pool may hold at 10,000 namespace tenants with the default RecycleAfter.
const memoryBound = 64 << 20

// TestRatioMemoryManyNamespaceTenants: N namespace tenants
// (TENANTWIRE_MEMORY_TENANTS, default 10,000), each a schema with one
// document, read round-robin by 16 goroutines through a module's own pool
// of 16 connections, several passes, so that every connection touches
// most schemas. Each pool connection then reads its own backend's memory
// (the sum of pg_backend_memory_contexts, the catalog caches of every
// relation it touched among them): the largest must stay within
// memoryBound with the default RecycleAfter, and is printed beside the
// same with no recycling. Then the module's read against a hand-written
// schema-qualified pgx read at that count, P14-pg-read-<N>-namespace.
func TestRatioMemoryManyNamespaceTenants(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	n := 10000
	if s := os.Getenv("TENANTWIRE_MEMORY_TENANTS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		must0(t, err)
	}
	ctx := context.Background()
	url := testsvc.PostgresURL(t) + "&pool_max_conns=16"
	prefix := "tw" + unique() + "_"
	ids := make([]tenancy.ID, n)
	ctxs := make([]context.Context, n)
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-c000-%012x", i+1))
		ctxs[i] = tenancy.WithTenant(ctx, ids[i])
	}
	admin, err := pgxpool.New(ctx, testsvc.PostgresURL(t)+"&pool_max_conns=4")
	must0(t, err)
	t.Cleanup(admin.Close)
	t.Cleanup(func() { dropTenants(t, admin, prefix, ids) })
	module := func(opts ...postgres.Option) (*postgres.Client, *postgres.Documents[item]) {
		var d *postgres.Documents[item]
		opts = append([]postgres.Option{postgres.Connect(url), postgres.SchemaPrefix(prefix),
			postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})}, opts...)
		c := start(t, postgres.Module("pg", opts...), &d)
		return c, d
	}

	began := time.Now()
	c, d := module()
	rep, err := c.ProvisionAll(ctx, ids, migrate.Options{Concurrency: 8})
	must0(t, err)
	if rep.Done != n {
		t.Fatalf("provisioned %d of %d: %v", rep.Done, n, rep.Failures[:min(3, len(rep.Failures))])
	}
	must0(t, ratio.Parallel(8, n, func(i int) error { _, err := d.Create(ctxs[i], "k", item{Name: "m", N: i}); return err }))
	t.Logf("provisioned %d tenants in %v", n, time.Since(began).Round(time.Millisecond))

	// largest reads every tenant passes times from 16 goroutines, then
	// holds all 16 connections at once (no tenant bound: not counted by
	// the recycling) and reads each backend's memory on itself.
	const passes = 8
	largest := func(c *postgres.Client, d *postgres.Documents[item]) (maxBytes int64, backends int) {
		began := time.Now()
		must0(t, ratio.Parallel(16, passes*n, func(k int) error { _, err := d.Get(ctxs[k%n], "k"); return err }))
		pool, release, err := c.Pool(ctx)
		must0(t, err)
		defer release()
		var conns []*pgxpool.Conn
		defer func() {
			for _, cn := range conns {
				cn.Release()
			}
		}()
		var sizes []int64
		for range 16 {
			cn, err := pool.Acquire(ctx)
			must0(t, err)
			conns = append(conns, cn)
			var b int64
			must0(t, cn.QueryRow(ctx, "SELECT pg_catalog.sum(total_bytes)::bigint FROM pg_catalog.pg_backend_memory_contexts",
				pgx.QueryExecModeSimpleProtocol).Scan(&b))
			sizes = append(sizes, b)
		}
		slices.Sort(sizes)
		t.Logf("%d reads in %v; backend memory of the 16 connections (MB): %v", passes*n, time.Since(began).Round(time.Millisecond), mb(sizes))
		return sizes[len(sizes)-1], len(sizes)
	}
	def, _ := largest(c, d)
	cKeep, dKeep := module(postgres.RecycleAfter(0))
	keep, _ := largest(cKeep, dKeep)
	fmt.Printf("scale memory pg-namespace-pool16 tenants=%d largest_conn_bytes default_recycle=%d no_recycle=%d\n", n, def, keep)
	t.Logf("at %d namespace tenants, the largest of 16 connections: %.1f MB with the default RecycleAfter, %.1f MB never recycled", n, float64(def)/(1<<20), float64(keep)/(1<<20))
	if def > memoryBound {
		t.Errorf("with the default RecycleAfter a connection holds %.1f MB of server memory at %d tenants; the bound is %d MB", float64(def)/(1<<20), n, memoryBound>>20)
	}
	// Past a few times the default's 1,000 tenants a connection that is
	// never recycled has read several times more schemas than one that is:
	// a default that stopped recycling would pass the bound unnoticed here.
	if n >= 4000 && def*2 > keep {
		t.Errorf("at %d tenants the largest connection holds %.1f MB with the default RecycleAfter and %.1f MB never recycled: the default does not recycle", n, float64(def)/(1<<20), float64(keep)/(1<<20))
	}

	hand, err := pgxpool.New(ctx, url)
	must0(t, err)
	t.Cleanup(hand.Close)
	mode := handMode(n, 1)
	qualified := make([]string, n)
	for i, id := range ids {
		qualified[i] = "SELECT version, value FROM " + pgx.Identifier{postgres.SchemaName(prefix, id)}.Sanitize() + ".docs WHERE id = $1"
	}
	oursNext, handNext := ratio.Cycle(n), ratio.Cycle(n)
	ours := func(k int) {
		for range k {
			if _, err := d.Get(ctxs[oursNext()], "k"); err != nil {
				t.Fatal(err)
			}
		}
	}
	byHand := func(k int) {
		for range k {
			i := handNext()
			var v int64
			var raw []byte
			must0(t, hand.QueryRow(ctxs[i], qualified[i], mode, "k").Scan(&v, &raw))
			decode(t, raw)
		}
	}
	// The hand pool's connections read the tenants as ours did, so that
	// the two pools start the pair with the same history.
	must0(t, ratio.Parallel(16, passes*n, func(k int) error {
		var v int64
		var raw []byte
		i := k % n
		return hand.QueryRow(ctxs[i], qualified[i], mode, "k").Scan(&v, &raw)
	}))
	name := strconv.Itoa(n)
	if n%1000 == 0 {
		name = strconv.Itoa(n/1000) + "k"
	}
	ratio.Report(t, ratio.Pair{Label: "P14", Name: "pg-read-" + name + "-namespace", Iterations: ratioIters, Rounds: ratioRounds, Step: 10, Ours: ours, Baseline: byHand}, 1.05)
	// The same read never recycled: what the recycling itself costs, a
	// fresh connection that has cached none of the tenants' relations.
	keepNext := ratio.Cycle(n)
	oursKeep := func(k int) {
		for range k {
			if _, err := dKeep.Get(ctxs[keepNext()], "k"); err != nil {
				t.Fatal(err)
			}
		}
	}
	ratio.Inform(t, ratio.Pair{Label: "P14", Name: "pg-read-" + name + "-namespace-no-recycle", Iterations: ratioIters, Rounds: ratioRounds, Step: 10, Ours: oursKeep, Baseline: byHand})
	// And against the hand-written read on a pool that closes a
	// connection once it read 1,000 distinct tenants, as the default does:
	// the framework's part of the cost, apart from the recycling's.
	handRec, handRecRead := recyclingHandPool(t, url, 1000)
	must0(t, ratio.Parallel(16, passes*n, func(k int) error { return handRecRead(ctxs[k%n], k%n, qualified[k%n], mode) }))
	recNext := ratio.Cycle(n)
	byHandRec := func(k int) {
		for range k {
			i := recNext()
			must0(t, handRecRead(ctxs[i], i, qualified[i], mode))
		}
	}
	ratio.Inform(t, ratio.Pair{Label: "P14", Name: "pg-read-" + name + "-namespace-vs-hand-recycled", Iterations: ratioIters, Rounds: ratioRounds, Step: 10, Ours: ours, Baseline: byHandRec})
	t.Logf("the hand pool that recycles closed %d connections", handRec.Load())
}

// recyclingHandPool is a pgx pool of the url's size that closes a
// connection, when it is next acquired, once it has read limit distinct
// tenants (in PrepareConn, as the module does: an AfterRelease hook would
// cost a goroutine per release); read runs a hand-written read of tenant
// i on it.
func recyclingHandPool(t *testing.T, url string, limit int) (closed *atomic.Int64, read func(ctx context.Context, i int, stmt string, mode pgx.QueryExecMode) error) {
	cfg, err := pgxpool.ParseConfig(url)
	must0(t, err)
	var mu sync.Mutex
	seen := map[*pgx.Conn]map[int]struct{}{}
	closed = new(atomic.Int64)
	cfg.PrepareConn = func(_ context.Context, c *pgx.Conn) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(seen[c]) >= limit {
			delete(seen, c)
			closed.Add(1)
			return false, nil
		}
		return true, nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	must0(t, err)
	t.Cleanup(pool.Close)
	return closed, func(ctx context.Context, i int, stmt string, mode pgx.QueryExecMode) error {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		var v int64
		var raw []byte
		if err := conn.QueryRow(ctx, stmt, mode, "k").Scan(&v, &raw); err != nil {
			return err
		}
		mu.Lock()
		m := seen[conn.Conn()]
		if m == nil {
			m = map[int]struct{}{}
			seen[conn.Conn()] = m
		}
		m[i] = struct{}{}
		mu.Unlock()
		return nil
	}
}

func mb(sizes []int64) []string {
	out := make([]string, len(sizes))
	for i, b := range sizes {
		out[i] = strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64)
	}
	return out
}
