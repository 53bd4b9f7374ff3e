package postgres_test

import (
	"container/list"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/internal/ratio"
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
// pgxpools with the same bound (concPoolLRU). The route also checks each
// new connection's server identity (one query), which the baseline does
// not; the test logs that query's share of a read's latency.
func TestRatioConcRoutedChurn(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	const tenants = concChurnTenants
	f := newRoutedScaleFixture(t, tenants)
	ctxs, own, d, oursWire := f.ctxs, f.own, f.docs, &f.wire
	var handWire wireCount
	lru := newConcPoolLRU(scalePoolBound, &handWire)
	t.Cleanup(lru.close)
	stmt := "SELECT version, value FROM " + routedScaleTable + " WHERE id = $1"
	// Each side's reads' latency, summed, to weigh the identity query
	// and the connects against.
	// The wall time of each side's rounds too: with every slot busy, a
	// slot's time per read is MaxClients × the wall time per read.
	var oursNanos, handNanos, oursWall, handWall atomic.Int64
	ours := func(i int) error {
		defer addSince(&oursNanos, time.Now())
		_, err := d.Get(ctxs[i], "k")
		return err
	}
	hand := func(i int) error {
		defer addSince(&handNanos, time.Now())
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
			for _, n := range []*atomic.Int64{&oursNanos, &handNanos, &oursWall, &handWall} {
				n.Store(0)
			}
			var oursReads, handReads int
			oursSide, handSide := ratio.ParallelSide(t, g, tenants, ours), ratio.ParallelSide(t, g, tenants, hand)
			p := ratio.Pair{Label: "C" + strconv.Itoa(tenants), Name: concName("pg-routed-churn-get", g), Iterations: concChurnIters, Rounds: concRounds, Cap: concCap,
				Ours:     func(n int) { oursReads += n; defer addSince(&oursWall, time.Now()); oursSide(n) },
				Baseline: func(n int) { handReads += n; defer addSince(&handWall, time.Now()); handSide(n) }}
			ratio.ReportParallel(t, p, 1.05, 5*concChurnIters)
			t.Logf("per read, ours: %s; baseline: %s", oursWire.per(oursReads), handWire.per(handReads))
			ms := func(n *atomic.Int64, reads int) float64 { return float64(n.Load()) / float64(reads) / 1e6 }
			t.Logf("latency per read, ours: %.2f ms (connecting %.2f ms, identity query %.2f ms, %.1f%% of the read); baseline: %.2f ms (connecting %.2f ms)",
				ms(&oursNanos, oursReads), ms(&oursWire.connectNanos, oursReads), ms(&oursWire.identityNanos, oursReads),
				100*float64(oursWire.identityNanos.Load())/float64(max(oursNanos.Load(), 1)),
				ms(&handNanos, handReads), ms(&handWire.connectNanos, handReads))
			t.Logf("wall time per read, ours: %.3f ms; baseline: %.3f ms; the identity query over %d slots: %.3f ms a read, %.1f%% of the route's slot time",
				ms(&oursWall, oursReads), ms(&handWall, handReads), scalePoolBound, ms(&oursWire.identityNanos, oursReads)/scalePoolBound,
				100*float64(oursWire.identityNanos.Load())/float64(scalePoolBound*max(oursWall.Load(), 1)))
			// Both sides churn: nearly every read opens a connection. The
			// route may send no more per read than the baseline (5% slack
			// for reads that found their tenant's pool still open on one
			// side and not the other) but its identity check.
			per := func(n int64, reads int) float64 { return float64(n) / float64(reads) }
			if o, h := per(oursWire.connects.Load(), oursReads), per(handWire.connects.Load(), handReads); o < 0.9 || h < 0.9 {
				t.Errorf("not churning: %.2f connections per read on ours, %.2f on the baseline", o, h)
			}
			oursWire.sendsNoMoreThan(t, oursReads, &handWire, handReads, 1.05)
		})
	}
}

// concPoolLRU is the routed churn pair's hand-written baseline: what a
// careful author writes for per-tenant pools shared by many goroutines
// with a bound on pools open or still closing, as routing.Pools counts
// them. A mutex guards a map and a recency list; each pool counts the
// reads using it, so that a retired pool closes (in a goroutine, as
// routing.Pools does) once they are done. A read that finds no slot for
// its new pool waits; while fewer pools are closing than reads waiting,
// the least recently used pool is retired, by a read when it starts
// waiting and by a read that releases a pool. No resolver, fingerprint,
// claim, server identity check or TTL: it trusts its map.
type concPoolLRU struct {
	trace pgx.QueryTracer
	max   int
	mu    sync.Mutex
	// used counts pools open or closing; draining, those closing;
	// waiting, reads waiting for a slot.
	used, draining, waiting int
	freed                   *sync.Cond // on mu: a slot was freed
	order                   *list.List // of *lruPool, most recent first
	pools                   map[tenancy.ID]*lruPool
	open                    sync.WaitGroup // pools not yet closed
}

type lruPool struct {
	tn      tenancy.ID
	p       *pgxpool.Pool
	elem    *list.Element
	refs    int
	retired bool
}

func newConcPoolLRU(max int, trace pgx.QueryTracer) *concPoolLRU {
	l := &concPoolLRU{trace: trace, max: max, order: list.New(), pools: map[tenancy.ID]*lruPool{}}
	l.freed = sync.NewCond(&l.mu)
	return l
}

// get returns tn's pool and its release, opening the pool if needed.
func (l *concPoolLRU) get(ctx context.Context, tn tenancy.ID, dsn string) (*pgxpool.Pool, func(), error) {
	l.mu.Lock()
	if e := l.pools[tn]; e != nil {
		return l.use(e)
	}
	l.takeSlot()
	l.mu.Unlock()
	cfg, err := pgxpool.ParseConfig(dsn + "&pool_max_conns=1")
	if err == nil {
		cfg.ConnConfig.Tracer = l.trace
		var p *pgxpool.Pool
		if p, err = pgxpool.NewWithConfig(ctx, cfg); err == nil {
			l.mu.Lock()
			if e := l.pools[tn]; e != nil { // opened by another read meanwhile
				l.mu.Unlock()
				p.Close()
				l.mu.Lock()
				l.freeSlot()
				return l.use(e)
			}
			e := &lruPool{tn: tn, p: p}
			e.elem = l.order.PushFront(e)
			l.pools[tn] = e
			l.open.Add(1)
			return l.use(e)
		}
	}
	l.mu.Lock()
	l.freeSlot()
	l.mu.Unlock()
	return nil, nil, err
}

// takeSlot waits for room for one more pool; with mu held.
func (l *concPoolLRU) takeSlot() {
	l.waiting++
	for l.used >= l.max {
		l.retireIfShort()
		l.freed.Wait()
	}
	l.waiting--
	l.used++
}

// freeSlot returns a slot; with mu held.
func (l *concPoolLRU) freeSlot() {
	l.used--
	l.freed.Signal()
}

// retireIfShort retires the least recently used pool while fewer pools
// are closing than reads are waiting; with mu held.
func (l *concPoolLRU) retireIfShort() {
	if l.draining < l.waiting {
		if back := l.order.Back(); back != nil {
			l.retire(back.Value.(*lruPool))
		}
	}
}

// use takes a reference on e; called with mu held, it releases mu.
func (l *concPoolLRU) use(e *lruPool) (*pgxpool.Pool, func(), error) {
	e.refs++
	l.order.MoveToFront(e.elem)
	l.mu.Unlock()
	return e.p, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		e.refs--
		if e.refs == 0 && e.retired {
			go l.closePool(e)
			return
		}
		l.retireIfShort()
	}, nil
}

// retire forgets e and closes it once nobody uses it; with mu held.
func (l *concPoolLRU) retire(e *lruPool) {
	l.order.Remove(e.elem)
	delete(l.pools, e.tn)
	e.retired = true
	l.draining++
	if e.refs == 0 {
		go l.closePool(e)
	}
}

func (l *concPoolLRU) closePool(e *lruPool) {
	e.p.Close()
	l.mu.Lock()
	l.draining--
	l.freeSlot()
	l.mu.Unlock()
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

func addSince(n *atomic.Int64, start time.Time) { n.Add(int64(time.Since(start))) }
