package postgres_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// scalePrefix names the scale benchmarks' tenant schemas. It is fixed, not
// per run: provisioning 10,000 schemas takes minutes, so they are made once
// per database and reused (the run's cleanup leaves them alone).
const scalePrefix = "twscale_"

// scaleCounts are the tenant counts of the scale pairs:
// TENANTWIRE_SCALE_TENANTS (a comma-separated list) or 1, 1,000 and 10,000.
func scaleCounts(t *testing.T) []int {
	s := os.Getenv("TENANTWIRE_SCALE_TENANTS")
	if s == "" {
		return []int{1, 1000, 10000}
	}
	var counts []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		must0(t, err)
		counts = append(counts, n)
	}
	return counts
}

// scaleFleet is n namespace tenants, each with record "k" in its docs
// table.
type scaleFleet struct {
	ids  []tenancy.ID
	ctxs []context.Context
}

// newScaleFleet provisions and seeds the first n tenants of scalePrefix
// that are missing (all of them the first time, none on a rerun).
func newScaleFleet(t *testing.T, n int) scaleFleet {
	t.Helper()
	f := scaleFleet{ids: make([]tenancy.ID, n), ctxs: make([]context.Context, n)}
	for i := range n {
		f.ids[i] = scaleTenant(i)
		f.ctxs[i] = tenancy.WithTenant(context.Background(), f.ids[i])
	}
	conn := superuser(t)
	have := map[string]bool{}
	rows, err := conn.Query(context.Background(), `SELECT n.nspname FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid
		WHERE n.nspname LIKE $1 AND c.relname = 'docs'`, scalePrefix+"%")
	must0(t, err)
	for rows.Next() {
		var s string
		must0(t, rows.Scan(&s))
		have[s] = true
	}
	must0(t, rows.Err())
	var missing []int
	for i, id := range f.ids {
		if !have[postgres.SchemaName(scalePrefix, id)] {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return f
	}
	pool, err := pgxpool.New(context.Background(), testsvc.PostgresURL(t))
	must0(t, err)
	defer pool.Close()
	var d *postgres.Documents[item]
	c := start(t, scaleModule(pool), &d)
	began := time.Now()
	t.Logf("provisioning %d missing tenants under %s (kept for later runs)", len(missing), scalePrefix)
	parallel(t, len(missing), func(j int) error {
		i := missing[j]
		if err := c.Provision(context.Background(), f.ids[i]); err != nil {
			return err
		}
		_, err := d.Create(f.ctxs[i], "k", item{Name: "bench", N: i})
		if errors.Is(err, document.ErrExists) {
			return nil
		}
		if j%1000 == 999 {
			t.Logf("provisioned %d of %d", j+1, len(missing))
		}
		return err
	})
	t.Logf("provisioned %d tenants in %v", len(missing), time.Since(began).Round(time.Millisecond))
	return f
}

// scaleModule is the namespace module of the scale pairs.
func scaleModule(pool *pgxpool.Pool) fx.Option {
	return postgres.Module("pg", postgres.Use(pool), postgres.SchemaPrefix(scalePrefix),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}))
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

// handMode is how a careful author runs per-tenant statement text by hand:
// prepared (pgx's default statement cache) while the tenants' statements
// fit the cache, the exec mode past it.
func handMode(tenants, statements int) pgx.QueryExecMode {
	if tenants*statements <= 512 {
		return pgx.QueryExecModeCacheStatement
	}
	return pgx.QueryExecModeExec
}
