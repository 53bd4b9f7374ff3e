package redis_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/tenancy"
)

func tenants(n int) []tenancy.ID {
	out := make([]tenancy.ID, n)
	for i := range out {
		out[i] = tenancy.MustParseID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i+1, i+1))
	}
	return out
}

// loadChecker drives mixed cache and counter traffic with values tagged by
// the writer's tenant, each (tenant, key) written by one goroutine only, and
// records every cross-tenant observation and lost acknowledged write.
type loadChecker struct {
	cache    *redis.Cache
	counter  *redis.Counter
	tenants  []tenancy.ID
	ok, errs atomic.Int64
	// lastErr is when the latest error happened (Unix nanoseconds).
	lastErr atomic.Int64
	// lossy counts reads that miss an acknowledged write in lost instead of
	// reporting a violation: a failover to a replica that had not yet
	// received the write (Redis replicates asynchronously). A read of
	// another tenant's value is a violation either way.
	lossy bool
	lost  atomic.Int64
	mu    sync.Mutex
	bad   []string
}

func (l *loadChecker) fail() {
	l.errs.Add(1)
	l.lastErr.Store(time.Now().UnixNano())
}

func (l *loadChecker) missed(format string, args ...any) {
	if l.lossy {
		l.lost.Add(1)
		return
	}
	l.violation(format, args...)
}

func (l *loadChecker) violation(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bad) < 20 {
		l.bad = append(l.bad, fmt.Sprintf(format, args...))
	}
}

// worker runs until ctx ends. For each key it owns it remembers the last
// acknowledged sequence and the last attempted one: a read must see its own
// tenant and a sequence between the two.
func (l *loadChecker) worker(ctx context.Context, g int) {
	acked := map[string]int64{}
	tried := map[string]int64{}
	counts := map[string]int64{}
	for seq := int64(1); ctx.Err() == nil; seq++ {
		id := l.tenants[int(seq)%len(l.tenants)]
		tctx := tenancy.WithTenant(context.Background(), id)
		key := fmt.Sprintf("g%d-k%d", g, seq%3)
		slot := id.Hex() + "/" + key
		tried[slot] = seq
		if err := l.cache.Set(tctx, key, []byte(id.Hex()+":"+strconv.FormatInt(seq, 10)), time.Minute); err != nil {
			l.fail()
		} else {
			acked[slot] = seq
			l.ok.Add(1)
		}
		v, found, err := l.cache.Get(tctx, key)
		switch {
		case err != nil:
			l.fail()
		case !found:
			if acked[slot] > 0 {
				l.missed("tenant %s key %s: acknowledged write %d lost", id, key, acked[slot])
			}
		default:
			owner, n, _ := strings.Cut(string(v), ":")
			got, _ := strconv.ParseInt(n, 10, 64)
			if owner != id.Hex() {
				l.violation("tenant %s read tenant %s's value", id.Hex(), owner)
			} else if got > tried[slot] {
				l.violation("tenant %s key %s: read %d, but only %d was tried", id, key, got, tried[slot])
			} else if got < acked[slot] {
				l.missed("tenant %s key %s: read %d, acked %d, tried %d", id, key, got, acked[slot], tried[slot])
			}
		}
		if n, err := l.counter.Add(tctx, key, 1); err == nil {
			counts[slot]++
			if n < counts[slot] {
				l.missed("tenant %s counter %s: %d after %d acknowledged increments", id, key, n, counts[slot])
				counts[slot] = n // what the server has now: count the shortfall once
			}
		} else {
			l.fail()
		}
	}
}

func (l *loadChecker) run(ctx context.Context, goroutines int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() { l.worker(ctx, g) })
	}
	return &wg
}

// 32 goroutines, 50 tenants, every tenant-scoped tier, under -race: no read
// observes another tenant's value.
func TestConcurrentLoadNoCrossTenantObservation(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	loadEveryTier(t, 700*time.Millisecond)
}

// TestSoakRedisLoad is the concurrent load test for longer (make soak; TENANTWIRE_SOAK_DURATION
// per tier, default 30s).
func TestSoakRedisLoad(t *testing.T) {
	if os.Getenv("TENANTWIRE_SOAK") != "1" {
		t.Skip("soak: run with `make soak` (TENANTWIRE_SOAK=1)")
	}
	d, err := time.ParseDuration(os.Getenv("TENANTWIRE_SOAK_DURATION"))
	if err != nil {
		d = 30 * time.Second
	}
	loadEveryTier(t, d)
}

func loadEveryTier(t *testing.T, d time.Duration) {
	e := newEnv(t)
	for _, tc := range keyedTiers(e) {
		t.Run(tc.tier.String(), func(t *testing.T) {
			cn, nn := e.name("load-c"+tc.tier.String()), e.name("load-n"+tc.tier.String())
			l := &loadChecker{
				cache:   route[*redis.Cache](t, e, cn, tc.with(redis.CacheRoute(cn, tc.route))...),
				counter: route[*redis.Counter](t, e, nn, tc.with(redis.CounterRoute(nn, tc.route))...),
				tenants: tenants(50),
			}
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			l.run(ctx, 32).Wait()
			if len(l.bad) > 0 {
				t.Fatalf("%d violations: %v", len(l.bad), l.bad)
			}
			if l.errs.Load() > 0 || l.ok.Load() == 0 {
				t.Fatalf("ok %d, errors %d", l.ok.Load(), l.errs.Load())
			}
			t.Logf("%d acknowledged writes, 0 violations", l.ok.Load())
		})
	}
}
