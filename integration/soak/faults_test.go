package soak_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/tenancy"
)

// fault is one scheduled fault: at is its offset into the traffic, inject
// does it (and returns once the server is back) and says what it did.
type fault struct {
	name   string
	at     time.Duration
	inject func() (string, error)
}

// faultRun is what one fault did: the errors callers saw from its start
// until the pipeline recovered, and how long recovery took end to end: a
// record acknowledged after the fault began has passed every sink.
type faultRun struct {
	name    string
	did     string
	start   time.Time
	outage  time.Duration // how long inject took (the server's downtime)
	base    counters
	atEnd   counters // when inject returned
	atRecov counters
	writes  time.Duration // until the first request acknowledged after the fault began; 0: none
	recov   time.Duration // until a record acknowledged after the fault began passed every sink; 0: not yet
	// The relay's produces charged to this fault (see produced): how many
	// Kafka refused, the slowest, and when (after the fault's start) the
	// last one that failed or took over slowProduce ended.
	produceFailed int
	produceMax    time.Duration
	disturbed     time.Duration
}

// slowProduce is a produce that counts as stalled: the relay's produces
// take milliseconds when every broker is up.
const slowProduce = time.Second

// counters are the run's error counts, and the records handled more than
// once before the inbox. failedBy and ackedBy split the requests by the
// server of the tenant's dedicated database.
type counters struct {
	request, consumer, relay, redelivered int64
	failedBy, ackedBy                     [2]int64
}

func (c counters) minus(o counters) counters {
	return counters{c.request - o.request, c.consumer - o.consumer, c.relay - o.relay, c.redelivered - o.redelivered,
		[2]int64{c.failedBy[0] - o.failedBy[0], c.failedBy[1] - o.failedBy[1]},
		[2]int64{c.ackedBy[0] - o.ackedBy[0], c.ackedBy[1] - o.ackedBy[1]}}
}

// faultClock runs the schedule and times each fault's recovery.
type faultClock struct {
	load  *load
	count func() counters

	mu   sync.Mutex
	runs []*faultRun
	open atomic.Int32 // faults not yet recovered end to end
}

// acked is the load's callback: the first request acknowledged after a
// fault began ends the writers' outage.
func (c *faultClock) acked(at time.Time) {
	if c.open.Load() == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.runs {
		if r.writes == 0 && at.After(r.start) {
			r.writes = at.Sub(r.start)
		}
	}
}

// delivered is the sinks' callback: the first record acknowledged after a
// fault began that passes every sink ends the fault's recovery.
func (c *faultClock) delivered(_ string, tenant tenancy.ID, seq int) {
	if c.open.Load() == 0 {
		return
	}
	at := c.load.ackedAt(tenant, seq)
	if at.IsZero() {
		return
	}
	var now counters
	counted := false
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.runs {
		if r.recov != 0 || at.Before(r.start) {
			continue
		}
		if !counted {
			now, counted = c.count(), true
		}
		r.recov, r.atRecov = time.Since(r.start), now
		c.open.Add(-1)
	}
}

// produced is the relay process's callback: each produce, charged to the
// latest fault begun before the produce's first slowProduce ended. So a
// produce in flight when a fault began is that fault's, and one stalled
// by a fault that ends after the next fault began stays the first's.
func (c *faultClock) produced(end time.Time, took time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := end.Add(-took).Add(slowProduce)
	if end.Before(at) {
		at = end
	}
	var r *faultRun
	for _, run := range c.runs {
		if !at.Before(run.start) {
			r = run
		}
	}
	if r == nil {
		return
	}
	r.produceMax = max(r.produceMax, took)
	if !ok {
		r.produceFailed++
	}
	if !ok || took > slowProduce {
		r.disturbed = max(r.disturbed, end.Sub(r.start))
	}
}

// run injects each fault at its time, until ctx (the traffic) ends. A
// fault whose time comes after the traffic, delayed by the faults before
// it, is not injected: that fails the run, which then did not show what
// it reports.
func (c *faultClock) run(ctx context.Context, begin time.Time, faults []fault) error {
	for i, f := range faults {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(begin.Add(f.at))):
		}
		if ctx.Err() != nil {
			var names []string
			for _, g := range faults[i:] {
				names = append(names, g.name)
			}
			return fmt.Errorf("faults not injected, the traffic ended first (the faults before them took %v; lengthen SOAK_DURATION): %v",
				time.Since(begin).Round(time.Second), names)
		}
		r := &faultRun{name: f.name, start: time.Now(), base: c.count()}
		c.mu.Lock()
		c.runs = append(c.runs, r)
		c.mu.Unlock()
		c.open.Add(1)
		did, err := f.inject()
		end := c.count()
		c.mu.Lock()
		r.did, r.outage, r.atEnd = did, time.Since(r.start), end
		c.mu.Unlock()
		if err != nil {
			return fmt.Errorf("fault %s: %w", f.name, err)
		}
	}
	return nil
}

func (c *faultClock) report() []string {
	now := c.count()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for i, r := range c.runs {
		next := now
		if i+1 < len(c.runs) {
			next = c.runs[i+1].base
		}
		o := r.atEnd.minus(r.base)
		line := fmt.Sprintf("soak fault %s: %s; outage %v (requests during it by the tenant's server: acknowledged 1=%d 2=%d, failed 1=%d 2=%d)",
			r.name, r.did, r.outage.Round(time.Millisecond), o.ackedBy[0], o.ackedBy[1], o.failedBy[0], o.failedBy[1])
		if r.recov == 0 {
			line += "; NOT recovered before the traffic ended"
		} else {
			d := r.atRecov.minus(r.base)
			line += fmt.Sprintf("; requests acknowledged again after %v; recovered end to end in %v; errors until then: requests=%d (server 1 tenants %d, server 2 tenants %d) consumer=%d relay=%d",
				r.writes.Round(time.Millisecond), r.recov.Round(time.Millisecond), d.request, d.failedBy[0], d.failedBy[1], d.consumer, d.relay)
		}
		line += fmt.Sprintf("; redelivered before the inbox until the next fault: %d", next.minus(r.base).redelivered)
		if r.disturbed > 0 {
			line += fmt.Sprintf("; produces: %d failed, slowest %v, failing or slower than %v until %v after the fault began",
				r.produceFailed, r.produceMax.Round(time.Millisecond), slowProduce, r.disturbed.Round(time.Millisecond))
		} else {
			line += fmt.Sprintf("; produces: none failed, slowest %v", r.produceMax.Round(time.Millisecond))
		}
		out = append(out, line)
	}
	return out
}

func (c *faultClock) unrecovered() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.runs {
		if r.recov == 0 {
			out = append(out, r.name)
		}
	}
	return out
}

// killRelay kills the relay process right after it handed a row to Kafka,
// with rows still waiting (so inside a batch: the rows it delivered are
// not marked), and starts a new one.
func killRelay(r *relayProc, pending func() int) (string, error) {
	// Bounded, so that the kill still falls inside the traffic.
	deadline := time.Now().Add(2 * time.Second)
	for pending() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	n := r.delivered.Load()
	for r.delivered.Load() == n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	r.kill()
	killed := r.delivered.Load()
	left := pending()
	start := time.Now()
	if err := r.start(); err != nil {
		return "", err
	}
	return fmt.Sprintf("SIGKILL right after the relay's delivery #%d, %d rows of the tenant-global outbox pending; new relay process ready in %v",
		killed, left, time.Since(start).Round(time.Millisecond)), nil
}

// pendingRows counts undelivered outbox rows (the tenant-global outbox).
func pendingRows(pg *privatePG) func() int {
	return func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, pg.plainURL("soak-fault"))
		if err != nil {
			return 0
		}
		defer conn.Close(ctx)
		var n int
		_ = conn.QueryRow(ctx, "SELECT count(*) FROM public.soak_orders_outbox WHERE delivered_at IS NULL").Scan(&n)
		return n
	}
}

// redelivered counts records the consumers handled more than once, before
// the inbox.
func (s *sinks) redelivered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, byTenant := range s.kafka {
		for _, seen := range byTenant {
			for _, c := range seen {
				if c > 1 {
					n += int(c) - 1
				}
			}
		}
	}
	return n
}
