package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRecycleAfterBoundsTheServersCatalogCache: one connection reads one
// document from each of 120 tenants' schemas. Without recycling its
// server backend stays the same and its catalog cache grows with every
// schema it touched; with RecycleAfter(20) the pool closes it after each
// 20 tenants (six backends in all) and the cache of the one serving stays
// at what 20 tenants' tables cost.
func TestRecycleAfterBoundsTheServersCatalogCache(t *testing.T) {
	tenants := migTenants(120)
	url := testsvc.PostgresURL(t) + "&pool_max_conns=1"
	prefix := "tw" + unique() + "_"
	read := func(recycle int) (perBackend map[int32]int, cacheKB int64) {
		var docs *postgres.Documents[item]
		c := start(t, postgres.Module("pg", postgres.Connect(url), postgres.SchemaPrefix(prefix), postgres.RecycleAfter(recycle),
			postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})), &docs)
		if recycle == 0 {
			provisionAll(t, c, tenants)
		}
		pool, release, err := c.Pool(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		perBackend = map[int32]int{}
		for _, id := range tenants {
			ctx := tenancy.WithTenant(context.Background(), id)
			if recycle == 0 {
				if _, err := docs.Create(ctx, "d", item{Name: "x"}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := docs.Get(ctx, "d"); err != nil {
				t.Fatal(err)
			}
			var pid int32
			// Under the same tenant: the pool's one connection, counted once.
			if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			perBackend[pid]++
		}
		// No tenant bound: not counted, and the connection that read last.
		if err := pool.QueryRow(context.Background(), "SELECT total_bytes FROM pg_backend_memory_contexts WHERE name = 'CacheMemoryContext'").Scan(&cacheKB); err != nil {
			t.Fatal(err)
		}
		return perBackend, cacheKB / 1024
	}
	keep, keepKB := read(0)
	rec, recKB := read(20)
	t.Logf("one connection reading 120 tenants' schemas: never recycled, tenants per backend %v, catalog cache %d KB; RecycleAfter(20), %v, %d KB", keep, keepKB, rec, recKB)
	if len(keep) != 1 {
		t.Fatalf("without recycling the tenants were served by %d backends: %v", len(keep), keep)
	}
	// A backend serves the tenant that filled it until that call's end: the
	// next one starts with the tenant after.
	for pid, n := range rec {
		if n > 20 {
			t.Errorf("backend %d served %d tenants; RecycleAfter(20)", pid, n)
		}
	}
	if len(rec) < 6 {
		t.Fatalf("RecycleAfter(20) over 120 tenants used %d backends: %v", len(rec), rec)
	}
	if recKB*2 > keepKB {
		t.Fatalf("the recycled connection's catalog cache (%d KB) is not clearly below the one that served every tenant (%d KB)", recKB, keepKB)
	}
}

// RecycleAfter on a pool the module does not own, or negative, is refused
// at fx.New; RecycleAfter(0) on it is not.
func TestRecycleAfterWiring(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	docs := postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})
	for name, opts := range map[string][]postgres.Option{
		"negative":        {postgres.Connect(testsvc.PostgresURL(t)), postgres.RecycleAfter(-1), docs},
		"a pool of yours": {postgres.Use(pool), postgres.RecycleAfter(10), docs},
	} {
		err := fx.New(fx.NopLogger, postgres.Module("pg", opts...)).Err()
		if tenancy.CodeOf(err) != tenancy.CodeWiringInvalid || !strings.Contains(err.Error(), "RecycleAfter") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := fx.New(fx.NopLogger, postgres.Module("pg", postgres.Use(pool), postgres.RecycleAfter(0), docs)).Err(); err != nil {
		t.Errorf("RecycleAfter(0) on a pool of yours: %v", err)
	}
}
