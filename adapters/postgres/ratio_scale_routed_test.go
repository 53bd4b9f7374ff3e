package postgres_test

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Routed scale: every dedicated tenant needs a database of its own (the
// tier refuses two tenants on one target), and the shared server here
// holds a handful of test databases and 100 connections, so the pair runs
// over scaleDatabases tenants, not 1,000, with a pool bound well under
// that: every read of the cycle finds its tenant's pool closed.
const (
	scaleDatabases = 100
	scalePoolBound = 8
)

// TestRatioScaleRouted: a routed point read cycling over scaleDatabases
// tenants with at most scalePoolBound pools open (pool churn) vs a
// hand-written LRU of per-tenant pools with the same bound.
func TestRatioScaleRouted(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	t.Logf("routed scale over %d tenants, one database each, not 1,000: the shared server holds no more; pools bounded to %d", scaleDatabases, scalePoolBound)
	dsns := scaleDatabasesDSNs(t, scaleDatabases)
	ids := make([]tenancy.ID, scaleDatabases)
	own := map[tenancy.ID]string{}
	ctxs := make([]context.Context, scaleDatabases)
	for i := range ids {
		ids[i] = scaleTenant(i)
		own[ids[i]] = dsns[i]
		ctxs[i] = tenancy.WithTenant(context.Background(), ids[i])
	}
	resolve := func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: own[tn]}, nil
	}
	const table = "routed"
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{MaxClients: scalePoolBound, MaxConnsPerClient: 1}),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: postgres.Table(table), Write: postgres.Table(table)})), &d)
	provision(t, c, ids...)
	for _, ctx := range ctxs {
		if _, err := d.Create(ctx, "k", item{Name: "bench"}); err != nil && !errors.Is(err, document.ErrExists) {
			t.Fatal(err)
		}
	}
	ours := func(n int) {
		for i := range n {
			if _, err := d.Get(ctxs[i%scaleDatabases], "k"); err != nil {
				t.Fatal(err)
			}
		}
	}
	lru := newPoolLRU(scalePoolBound)
	t.Cleanup(lru.close)
	stmt := "SELECT version, value FROM " + table + " WHERE id = $1"
	hand := func(n int) {
		for i := range n {
			ctx := ctxs[i%scaleDatabases]
			tn, _ := tenancy.Require(ctx)
			p, err := lru.get(ctx, tn, own[tn])
			must0(t, err)
			var v int64
			var raw []byte
			must0(t, p.QueryRow(ctx, stmt, "k").Scan(&v, &raw))
			decode(t, raw)
		}
	}
	ratio.ReportScale(t, ratio.Pair{Label: "S" + strconv.Itoa(scaleDatabases), Name: "pg-routed-churn-get-vs-hand-lru", Iterations: 2 * scaleDatabases, Rounds: 7, Ours: ours, Baseline: hand}, 1.05)
}

// poolLRU is the hand-written baseline: per-tenant pools, the least
// recently used closed when a new one would pass the bound.
type poolLRU struct {
	max   int
	order *list.List // of tenancy.ID, most recent first
	pools map[tenancy.ID]*pgxpool.Pool
	elems map[tenancy.ID]*list.Element
}

func newPoolLRU(max int) *poolLRU {
	return &poolLRU{max: max, order: list.New(), pools: map[tenancy.ID]*pgxpool.Pool{}, elems: map[tenancy.ID]*list.Element{}}
}

func (l *poolLRU) get(ctx context.Context, tn tenancy.ID, dsn string) (*pgxpool.Pool, error) {
	if p, ok := l.pools[tn]; ok {
		l.order.MoveToFront(l.elems[tn])
		return p, nil
	}
	if len(l.pools) >= l.max {
		last := l.order.Back()
		old := last.Value.(tenancy.ID)
		l.pools[old].Close()
		delete(l.pools, old)
		delete(l.elems, old)
		l.order.Remove(last)
	}
	p, err := pgxpool.New(ctx, dsn+"&pool_max_conns=1")
	if err != nil {
		return nil, err
	}
	l.pools[tn], l.elems[tn] = p, l.order.PushFront(tn)
	return p, nil
}

func (l *poolLRU) close() {
	for _, p := range l.pools {
		p.Close()
	}
}

// scaleDatabasesDSNs creates the first n databases named twscale_db_<i>
// that are missing and kept for later runs (creating one copies a
// template: seconds each on a loaded machine).
func scaleDatabasesDSNs(t *testing.T, n int) []string {
	conn := superuser(t)
	base := testsvc.PostgresURL(t)
	var dsns []string
	for i := range n {
		db := fmt.Sprintf("twscale_db_%d", i)
		var exists bool
		must0(t, conn.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_database WHERE datname = $1)", db).Scan(&exists))
		if !exists {
			exec(t, conn, "CREATE DATABASE "+db)
		}
		u, err := url.Parse(base)
		must0(t, err)
		u.Path = "/" + db
		dsns = append(dsns, u.String())
	}
	return dsns
}
