package postgres_test

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Routed scale: every dedicated tenant needs a database of its own (the
// tier refuses two tenants on one target), so the pair runs over
// scaleDatabases databases on the second test server, which only tests
// use, created once and kept. The pool bound is far under the tenant
// count: every read of the cycle finds its tenant's pool closed and opens
// a connection, on both sides.
const (
	scaleDatabases = 1000
	scalePoolBound = 8
	// scaleReadsPerRound: each side continues its cycle across calls, so
	// the warm-up and 7 rounds read every tenant at least once.
	scaleReadsPerRound = 250
	// FILE_COPY copies the template's files once and checkpoints the
	// second server, where nothing else waits on it; WAL_LOG (the default)
	// writes every copied block to the WAL as well. Measured here, 4 at
	// once from template0: 100 databases in 8.7 and 20.0 s with FILE_COPY,
	// 19.2 and 20.1 s with WAL_LOG. A template of our own holding the
	// table is no smaller (the catalogs are the 7.5 MB).
	scaleCreateStrategy = "FILE_COPY"
)

// TestRatioScaleRouted: a routed point read cycling over scaleDatabases
// tenants with at most scalePoolBound pools open (pool churn) vs a
// hand-written LRU of per-tenant pools with the same bound.
func TestRatioScaleRouted(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	t.Logf("routed scale over %d tenants, one database each on the second server; pools bounded to %d", scaleDatabases, scalePoolBound)
	began := time.Now()
	f := newRoutedScaleFixture(t, scaleDatabases)
	t.Logf("provisioned and seeded %d tenants in %s", scaleDatabases, time.Since(began).Round(time.Millisecond))
	ctxs, own, d, oursWire := f.ctxs, f.own, f.docs, &f.wire
	var handWire wireCount
	var oursNext int
	ours := func(n int) {
		for range n {
			if _, err := d.Get(ctxs[oursNext%scaleDatabases], "k"); err != nil {
				t.Fatal(err)
			}
			oursNext++
		}
	}
	lru := newPoolLRU(scalePoolBound, &handWire)
	t.Cleanup(lru.close)
	stmt := "SELECT version, value FROM " + routedScaleTable + " WHERE id = $1"
	var handNext int
	hand := func(n int) {
		for range n {
			ctx := ctxs[handNext%scaleDatabases]
			handNext++
			tn, _ := tenancy.Require(ctx)
			p, err := lru.get(ctx, tn, own[tn])
			must0(t, err)
			var v int64
			var raw []byte
			must0(t, p.QueryRow(ctx, stmt, "k").Scan(&v, &raw))
			decode(t, raw)
		}
	}
	ratio.ReportScale(t, ratio.Pair{Label: "S" + strconv.Itoa(scaleDatabases), Name: "pg-routed-churn-get-vs-hand-lru", Iterations: scaleReadsPerRound, Rounds: 7, Ours: ours, Baseline: hand}, 1.05)
	if oursNext < scaleDatabases || handNext < scaleDatabases {
		t.Fatalf("a side read fewer than every tenant (ours %d, baseline %d reads of %d tenants)", oursNext, handNext, scaleDatabases)
	}
	t.Logf("per read, ours: %s; baseline: %s", oursWire.per(oursNext), handWire.per(handNext))
	// Churn means a new connection for every read; the route must send no
	// more than the baseline does, but its identity check.
	if oursWire.connects.Load() != int64(oursNext) || handWire.connects.Load() != int64(handNext) {
		t.Errorf("not every read opened a connection: ours %d for %d reads, baseline %d for %d", oursWire.connects.Load(), oursNext, handWire.connects.Load(), handNext)
	}
	oursWire.sendsNoMoreThan(t, oursNext, &handWire, handNext, 1)
}

// routedScaleTable is the routed pairs' table, in every tenant's database.
const routedScaleTable = "routed"

// routedScaleFixture is the routed scale and churn pairs' set-up: n
// tenants, each its own database on the second server, a routed module
// bounded to scalePoolBound pools of one connection counting its wire
// work in wire, and one document per tenant.
type routedScaleFixture struct {
	ctxs []context.Context
	own  map[tenancy.ID]string // tenant -> its database's DSN
	docs *postgres.Documents[item]
	wire wireCount
}

// newRoutedScaleFixture builds the fixture. Provisioning and the
// document are idempotent, so a rerun only checks them: one connection
// per tenant, a few at once. wire is reset afterwards.
func newRoutedScaleFixture(t *testing.T, n int) *routedScaleFixture {
	t.Helper()
	dsns := scaleDatabasesDSNs(t, n)
	f := &routedScaleFixture{ctxs: make([]context.Context, n), own: map[tenancy.ID]string{}}
	ids := make([]tenancy.ID, n)
	for i := range ids {
		ids[i] = scaleTenant(i)
		f.own[ids[i]] = dsns[i]
		f.ctxs[i] = tenancy.WithTenant(context.Background(), ids[i])
	}
	resolve := func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: f.own[tn]}, nil
	}
	c := start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: scalePoolBound, MaxConnsPerClient: 1},
		Configure: func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = &f.wire }}),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared(routedScaleTable), Write: naming.Shared(routedScaleTable)})), &f.docs)
	parallel(t, n, func(i int) error {
		if err := c.Provision(context.Background(), ids[i]); err != nil {
			return err
		}
		if _, err := f.docs.Create(f.ctxs[i], "k", item{Name: "bench"}); err != nil && !errors.Is(err, document.ErrExists) {
			return err
		}
		return nil
	})
	f.wire.reset()
	return f
}

// sendsNoMoreThan fails t unless the route (w, over reads) sent no more
// prepares or queries per read than the baseline (h, over handReads) times
// slack, but for its identity check: one unprepared query on each new
// connection (TestRoutedIdentityCheckIsOneRoundTrip), which a hand-written
// pool does not send.
func (w *wireCount) sendsNoMoreThan(t *testing.T, reads int, h *wireCount, handReads int, slack float64) {
	t.Helper()
	per := func(n *atomic.Int64, r int) float64 { return float64(n.Load()) / float64(r) }
	if per(&w.prepares, reads) > slack*per(&h.prepares, handReads) ||
		per(&w.queries, reads) > slack*per(&h.queries, handReads)+per(&w.connects, reads) {
		t.Errorf("the route sends more than the baseline and its identity check: ours %s, baseline %s", w.per(reads), h.per(handReads))
	}
}

// wireCount is a pgx tracer counting connections, prepares and queries.
type wireCount struct {
	connects, prepares, queries atomic.Int64
	// connectNanos sums the time spent connecting (startup and
	// authentication), identityNanos the time in the server identity
	// query, which pgxpool runs after that, before handing the connection
	// out.
	connectNanos, identityNanos atomic.Int64
}

func (w *wireCount) reset() {
	for _, n := range []*atomic.Int64{&w.connects, &w.prepares, &w.queries, &w.connectNanos, &w.identityNanos} {
		n.Store(0)
	}
}

func (w *wireCount) per(reads int) string {
	f := func(n *atomic.Int64) float64 { return float64(n.Load()) / float64(reads) }
	return fmt.Sprintf("%.2f connections, %.2f prepares, %.2f queries", f(&w.connects), f(&w.prepares), f(&w.queries))
}

// connectStart and identityStart carry a traced operation's start time.
type connectStart struct{}
type identityStart struct{}

func since(ctx context.Context, key any, n *atomic.Int64) {
	if t, ok := ctx.Value(key).(time.Time); ok {
		n.Add(int64(time.Since(t)))
	}
}

func (w *wireCount) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	w.connects.Add(1)
	return context.WithValue(ctx, connectStart{}, time.Now())
}

func (w *wireCount) TraceConnectEnd(ctx context.Context, _ pgx.TraceConnectEndData) {
	since(ctx, connectStart{}, &w.connectNanos)
}

func (w *wireCount) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	w.prepares.Add(1)
	return ctx
}

func (w *wireCount) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (w *wireCount) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	w.queries.Add(1)
	if strings.Contains(d.SQL, "pg_control_system()") {
		return context.WithValue(ctx, identityStart{}, time.Now())
	}
	return ctx
}

func (w *wireCount) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	since(ctx, identityStart{}, &w.identityNanos)
}

// poolLRU is the hand-written baseline: per-tenant pools, the least
// recently used closed when a new one would pass the bound.
type poolLRU struct {
	max   int
	trace pgx.QueryTracer
	order *list.List // of tenancy.ID, most recent first
	pools map[tenancy.ID]*pgxpool.Pool
	elems map[tenancy.ID]*list.Element
}

func newPoolLRU(max int, trace pgx.QueryTracer) *poolLRU {
	return &poolLRU{max: max, trace: trace, order: list.New(), pools: map[tenancy.ID]*pgxpool.Pool{}, elems: map[tenancy.ID]*list.Element{}}
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
	cfg, err := pgxpool.ParseConfig(dsn + "&pool_max_conns=1")
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.Tracer = l.trace
	p, err := pgxpool.NewWithConfig(ctx, cfg)
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

// scaleDatabasesDSNs returns the URLs of databases twscale_db_0 to
// twscale_db_<n-1> on the second server, creating those missing (4 at
// once) and keeping them for later runs.
func scaleDatabasesDSNs(t *testing.T, n int) []string {
	base := testsvc.PostgresSecondURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	must0(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_catalog.pg_database WHERE datname LIKE 'twscale\_db\_%'`)
	must0(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must0(t, err)
	have := map[string]bool{}
	for _, name := range names {
		have[name] = true
	}
	var missing []string
	dsns := make([]string, n)
	for i := range n {
		db := fmt.Sprintf("twscale_db_%d", i)
		if !have[db] {
			missing = append(missing, db)
		}
		u, err := url.Parse(base)
		must0(t, err)
		u.Path = "/" + db
		dsns[i] = u.String()
	}
	if len(missing) == 0 {
		t.Logf("all %d databases exist (created by an earlier run)", n)
		return dsns
	}
	began := time.Now()
	parallel(t, len(missing), func(i int) error {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "CREATE DATABASE "+missing[i]+" TEMPLATE template0 STRATEGY "+scaleCreateStrategy)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42P04" {
			err = nil // created meanwhile by another run
		}
		return err
	})
	took := time.Since(began)
	t.Logf("created %d databases in %s (%s each, 4 at once, STRATEGY %s)", len(missing), took.Round(time.Millisecond),
		(took / time.Duration(len(missing))).Round(time.Millisecond), scaleCreateStrategy)
	return dsns
}
