package postgres_test

import (
	"container/list"
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// The routed churn pair runs over the first concChurnTenants databases of
// the routed scale pair (twscale_db_<i> on the second server, tenant
// scaleTenant(i), kept between runs) with at most scalePoolBound pools:
// reads cycling over 100 tenants with 8 pools find their tenant's pool
// closed as surely as over 1,000, and 100 databases take seconds to make
// where 1,000 take minutes and 7 GB.
const (
	concChurnTenants = 100
	// concChurnIters: every read opens a connection (some 5 ms here), so
	// a round is a few hundred, not concIters.
	concChurnIters = 400
)

// TestRatioConcRoutedChurn: a routed point read from G goroutines cycling
// over 100 tenants, each on its own database, with MaxClients 8 and one
// connection a pool, so that nearly every read opens its tenant's pool
// and retires another's, vs a hand-written concurrent LRU of per-tenant
// pgxpools with the same bound (concPoolLRU).
func TestRatioConcRoutedChurn(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	const tenants = concChurnTenants
	dsns := scaleDatabasesDSNs(t, tenants)
	ids := make([]tenancy.ID, tenants)
	ctxs := make([]context.Context, tenants)
	own := map[tenancy.ID]string{}
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
	var oursWire, handWire wireCount
	c := start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{MaxClients: scalePoolBound, MaxConnsPerClient: 1,
		Configure: func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = &oursWire }}),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: postgres.Table(table), Write: postgres.Table(table)})), &d)
	parallel(t, tenants, func(i int) error {
		if err := c.Provision(context.Background(), ids[i]); err != nil {
			return err
		}
		if _, err := d.Create(ctxs[i], "k", item{Name: "bench"}); err != nil && !errors.Is(err, document.ErrExists) {
			return err
		}
		return nil
	})
	lru := newConcPoolLRU(scalePoolBound, &handWire)
	t.Cleanup(lru.close)
	stmt := "SELECT version, value FROM " + table + " WHERE id = $1"
	ours := func(i int) error {
		_, err := d.Get(ctxs[i], "k")
		return err
	}
	hand := func(i int) error {
		tn, _ := tenancy.Require(ctxs[i])
		p, release, err := lru.get(ctxs[i], tn, own[tn])
		if err != nil {
			return err
		}
		defer release()
		var v int64
		var raw []byte
		if err := p.QueryRow(ctxs[i], stmt, "k").Scan(&v, &raw); err != nil {
			return err
		}
		return decodeErr(raw)
	}
	for _, g := range concGs {
		t.Run("g"+strconv.Itoa(g), func(t *testing.T) {
			oursWire.reset()
			handWire.reset()
			var oursReads, handReads int
			oursSide, handSide := ratio.ParallelSide(t, g, tenants, ours), ratio.ParallelSide(t, g, tenants, hand)
			p := ratio.Pair{Label: "C" + strconv.Itoa(tenants), Name: concName("pg-routed-churn-get", g), Iterations: concChurnIters, Rounds: concRounds, Cap: concCap,
				Ours:     func(n int) { oursReads += n; oursSide(n) },
				Baseline: func(n int) { handReads += n; handSide(n) }}
			ratio.ReportParallel(t, p, 1.05, 5*concChurnIters)
			t.Logf("per read, ours: %s; baseline: %s", oursWire.per(oursReads), handWire.per(handReads))
			// Both sides churn: nearly every read opens a connection. The
			// route may send no more per read than the baseline (5% slack
			// for reads that found their tenant's pool still open on one
			// side and not the other).
			per := func(n int64, reads int) float64 { return float64(n) / float64(reads) }
			if o, h := per(oursWire.connects.Load(), oursReads), per(handWire.connects.Load(), handReads); o < 0.9 || h < 0.9 {
				t.Errorf("not churning: %.2f connections per read on ours, %.2f on the baseline", o, h)
			}
			if per(oursWire.prepares.Load()+oursWire.queries.Load(), oursReads) > 1.05*per(handWire.prepares.Load()+handWire.queries.Load(), handReads) {
				t.Errorf("the route sends more than the baseline: ours %s, baseline %s", oursWire.per(oursReads), handWire.per(handReads))
			}
		})
	}
}

// concPoolLRU is the routed churn pair's hand-written baseline: what a
// careful author writes for per-tenant pools shared by many goroutines
// with a bound on pools open or still closing, as routing.Pools counts
// them. A mutex guards a map and a recency list; each pool counts the
// reads using it, so that a retired pool closes (in a goroutine, as
// routing.Pools does) once they are done; a channel of max slots is what a
// new pool waits for, retiring the least recently used pool when none is
// free. No resolver, fingerprint, claim or TTL: it trusts its map.
type concPoolLRU struct {
	trace pgx.QueryTracer
	slots chan struct{}
	mu    sync.Mutex
	order *list.List // of *lruPool, most recent first
	pools map[tenancy.ID]*lruPool
	open  sync.WaitGroup // pools not yet closed
}

type lruPool struct {
	tn      tenancy.ID
	p       *pgxpool.Pool
	elem    *list.Element
	refs    int
	retired bool
}

func newConcPoolLRU(max int, trace pgx.QueryTracer) *concPoolLRU {
	return &concPoolLRU{trace: trace, slots: make(chan struct{}, max), order: list.New(), pools: map[tenancy.ID]*lruPool{}}
}

// get returns tn's pool and its release, opening the pool if needed.
func (l *concPoolLRU) get(ctx context.Context, tn tenancy.ID, dsn string) (*pgxpool.Pool, func(), error) {
	l.mu.Lock()
	if e := l.pools[tn]; e != nil {
		return l.use(e)
	}
	l.mu.Unlock()
	if err := l.slot(ctx); err != nil {
		return nil, nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn + "&pool_max_conns=1")
	if err != nil {
		<-l.slots
		return nil, nil, err
	}
	cfg.ConnConfig.Tracer = l.trace
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		<-l.slots
		return nil, nil, err
	}
	l.mu.Lock()
	if e := l.pools[tn]; e != nil { // opened by another read meanwhile
		p.Close()
		<-l.slots
		return l.use(e)
	}
	e := &lruPool{tn: tn, p: p}
	e.elem = l.order.PushFront(e)
	l.pools[tn] = e
	l.open.Add(1)
	return l.use(e)
}

// use takes a reference on e; called with mu held, it releases mu.
func (l *concPoolLRU) use(e *lruPool) (*pgxpool.Pool, func(), error) {
	e.refs++
	l.order.MoveToFront(e.elem)
	l.mu.Unlock()
	return e.p, func() {
		l.mu.Lock()
		e.refs--
		done := e.refs == 0 && e.retired
		l.mu.Unlock()
		if done {
			go l.closePool(e)
		}
	}, nil
}

// slot takes a slot for a new pool; with none free it retires the least
// recently used pool, whose slot frees when its reads are done, and waits.
func (l *concPoolLRU) slot(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	l.mu.Lock()
	if back := l.order.Back(); back != nil {
		l.retire(back.Value.(*lruPool))
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // routing's MaxWait
	defer cancel()
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retire forgets e and closes it when nobody uses it; with mu held.
func (l *concPoolLRU) retire(e *lruPool) {
	l.order.Remove(e.elem)
	delete(l.pools, e.tn)
	e.retired = true
	if e.refs == 0 {
		go l.closePool(e)
	}
}

func (l *concPoolLRU) closePool(e *lruPool) {
	e.p.Close()
	<-l.slots
	l.open.Done()
}

func (l *concPoolLRU) close() {
	l.mu.Lock()
	for l.order.Len() > 0 {
		l.retire(l.order.Back().Value.(*lruPool))
	}
	l.mu.Unlock()
	l.open.Wait()
}
