package tenancytest

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Worker is one background worker (a relay, a consumer) under the
// fairness check (Fair): how to write the items of the tenants it must
// keep serving, how to park a failing tenant's items at the head of its
// queue, and how many times it delivered an item.
type Worker struct {
	// Enqueue writes n items for each tenant the check keeps serving
	// (every tenant but the failing one) and returns their keys.
	Enqueue func(ctx context.Context, n int) ([]string, error)
	// Park writes the failing tenant's items, older than anything
	// Enqueue writes next, and makes them fail (suspends the tenant,
	// takes its destination down) before the worker can deliver one;
	// it returns their keys.
	Park func(ctx context.Context) ([]string, error)
	// Restore ends the failure Park began (resumes the tenant, brings its
	// destination back).
	Restore func(ctx context.Context) error
	// Delivered is how many times the item key was delivered.
	Delivered func(key string) int
	// WhileParked, when set, runs after the parked rounds and before
	// Restore, for what the worker promises of a parked tenant's items
	// (a consumer's committed offset held at its first record).
	WhileParked func(t testing.TB)

	// N is how many items of each tenant a round writes (10); Rounds how
	// many rounds are timed on each side (5); Timeout how long a round may
	// take before the check fails (30s).
	N, Rounds int
	Timeout   time.Duration
}

// Latency is what Fair measured: the median time a round of the served
// tenants' items took to be delivered with nothing parked (Usual) and
// with the failing tenant's items at the head (Parked).
type Latency struct {
	Usual, Parked time.Duration
}

// Ratio is Parked over Usual.
func (l Latency) Ratio() float64 { return float64(l.Parked) / float64(l.Usual) }

// Fair checks the fairness promise of a worker across tenants: a tenant
// whose items fail does not delay another tenant's. It times rounds of
// the served tenants' items (Worker.Enqueue) with nothing parked, parks
// the failing tenant's items at the head (Worker.Park), times as many
// rounds again, and fails when the median parked round took more than
// twice the usual median (plus the 2 ms a round is timed to and
// fairSlack of a busy machine's noise), when a
// parked item was delivered while its tenant failed, or when, after
// Worker.Restore, an item is not delivered exactly once. The first round, before the timing, lets the worker
// settle (a consumer joining its group).
func Fair(t testing.TB, w Worker) Latency {
	t.Helper()
	if w.Enqueue == nil || w.Park == nil || w.Restore == nil || w.Delivered == nil {
		t.Fatal("tenancytest.Fair: Enqueue, Park, Restore and Delivered are required")
	}
	if w.N <= 0 {
		w.N = 10
	}
	if w.Rounds <= 0 {
		w.Rounds = 5
	}
	if w.Timeout <= 0 {
		w.Timeout = 30 * time.Second
	}
	ctx := context.Background()
	var all []string
	round := func() time.Duration {
		t.Helper()
		begin := time.Now()
		keys, err := w.Enqueue(ctx, w.N)
		must(t, "fairness: enqueue", err)
		waitDelivered(t, w, keys, "a served tenant's")
		all = append(all, keys...)
		return time.Since(begin)
	}
	timed := func() time.Duration {
		t.Helper()
		took := make([]time.Duration, w.Rounds)
		for i := range took {
			took[i] = round()
		}
		slices.Sort(took)
		return took[len(took)/2]
	}
	round()
	var l Latency
	l.Usual = timed()

	parked, err := w.Park(ctx)
	must(t, "fairness: park", err)
	if len(parked) == 0 {
		t.Fatal("tenancytest.Fair: Park wrote no item")
	}
	restored := false
	defer func() {
		if !restored {
			_ = w.Restore(ctx)
		}
	}()
	l.Parked = timed()
	t.Logf("fairness: a round of %d items per served tenant took %v usually, %v with %d failing items at the head (%.2fx)",
		w.N, l.Usual, l.Parked, len(parked), l.Ratio())
	// A round is timed to within a poll of Delivered, and a round of a few
	// milliseconds on a busy machine varies by tens of them: the bound
	// allows both. A worker the failing items stall, or slow by a backoff
	// per pass, is far past it (a stalled one never ends its round).
	if l.Parked > 2*l.Usual+poll+fairSlack {
		t.Errorf("fairness: with a failing tenant's items at the head, the others' took %v, usually %v (%.2fx; want at most 2x)",
			l.Parked, l.Usual, l.Ratio())
	}
	for _, k := range parked {
		if n := w.Delivered(k); n != 0 {
			t.Errorf("fairness: the failing tenant's item %s was delivered %d times while it failed", k, n)
		}
	}
	if w.WhileParked != nil {
		w.WhileParked(t)
	}
	must(t, "fairness: restore", w.Restore(ctx))
	restored = true
	waitDelivered(t, w, parked, "the restored tenant's")
	for _, k := range append(all, parked...) {
		if n := w.Delivered(k); n != 1 {
			t.Errorf("fairness: item %s delivered %d times, want once", k, n)
		}
	}
	return l
}

// fairSlack is what Fair allows a parked round past twice the usual one
// for the machine's own noise: CI runs packages side by side on two
// cores, where an 8 ms round has taken 25.
const fairSlack = 100 * time.Millisecond

// waitDelivered waits until every key was delivered at least once.
func waitDelivered(t testing.TB, w Worker, keys []string, whose string) {
	t.Helper()
	deadline := time.Now().Add(w.Timeout)
	for {
		missing := 0
		for _, k := range keys {
			if w.Delivered(k) == 0 {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fairness: %d of %d of %s items not delivered within %v", missing, len(keys), whose, w.Timeout)
		}
		time.Sleep(poll)
	}
}

// poll is how often waitDelivered asks Delivered.
const poll = 2 * time.Millisecond
