package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// skipSource is memSource leaving the parked tenants' rows out of a claim.
type skipSource struct {
	*memSource
	skips atomic.Int64
}

func (s *skipSource) ClaimSkipping(ctx context.Context, limit int, skip []tenancy.ID) (outbox.Batch, error) {
	s.skips.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := &memBatch{s: s.memSource}
	for _, m := range s.rows {
		if len(b.msgs) == limit {
			break
		}
		if s.done[m.EventID] || s.claimed[m.EventID] || slices.Contains(skip, m.Tenant) {
			continue
		}
		s.claimed[m.EventID] = true
		b.msgs = append(b.msgs, m)
	}
	return b, nil
}

// gate refuses a suspended tenant's rows and records the order of the rest.
type gate struct {
	mu        sync.Mutex
	suspended map[tenancy.ID]bool
	order     map[tenancy.ID][]string
	attempts  map[tenancy.ID]int
}

func newGate(suspended ...tenancy.ID) *gate {
	g := &gate{suspended: map[tenancy.ID]bool{}, order: map[tenancy.ID][]string{}, attempts: map[tenancy.ID]int{}}
	for _, id := range suspended {
		g.suspended[id] = true
	}
	return g
}

func (g *gate) Deliver(_ context.Context, m outbox.Message) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.attempts[m.Tenant]++
	if g.suspended[m.Tenant] {
		return &tenancy.Error{Code: tenancy.CodeTenantSuspended, Detail: "suspended"}
	}
	g.order[m.Tenant] = append(g.order[m.Tenant], m.EventID)
	return nil
}

func (g *gate) got(id tenancy.ID) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.order[id])
}

func (g *gate) resume(id tenancy.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.suspended, id)
}

// headOf: n rows of the suspended tenant first, then n of each other.
func headOf(n int, suspended tenancy.ID, others ...tenancy.ID) []outbox.Message {
	var out []outbox.Message
	for i, id := range append([]tenancy.ID{suspended}, others...) {
		for j := range n {
			out = append(out, outbox.Message{Tenant: id, EventID: fmt.Sprintf("t%d-%03d", i, j)})
		}
	}
	return out
}

func want(i, n int) []string {
	var out []string
	for j := range n {
		out = append(out, fmt.Sprintf("t%d-%03d", i, j))
	}
	return out
}

// TestSuspendedTenantAtTheHeadStallsNoOne: a tenant-global relay whose
// oldest rows are a suspended tenant's, more than a batch of them, delivers
// every other tenant's rows while that tenant is parked (it is retried
// with a bounded backoff, not at every pass), then delivers the parked
// rows in their order once the tenant is resumed; none lost.
func TestSuspendedTenantAtTheHeadStallsNoOne(t *testing.T) {
	a, b, c := tenancytest.TenantA, tenancytest.TenantB, tenancy.Default
	src := &skipSource{memSource: newSource(headOf(20, a, b, c)...)}
	g := newGate(a)
	r, err := outbox.NewRelay(outbox.RelayConfig{Name: "park", Source: src, Destination: g,
		BatchSize: 5, Idle: 5 * time.Millisecond, WorkerConfig: shards.WorkerConfig{MaxBackoff: 50 * time.Millisecond, Logger: quiet(), Backoff: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Stop(context.Background()) }()
	waitFor(t, func() bool { return len(g.got(b)) == 20 && len(g.got(c)) == 20 })
	if !slices.Equal(g.got(b), want(1, 20)) || !slices.Equal(g.got(c), want(2, 20)) {
		t.Fatalf("other tenants out of order: %v %v", g.got(b), g.got(c))
	}
	time.Sleep(200 * time.Millisecond)
	g.mu.Lock()
	tries := g.attempts[a]
	g.mu.Unlock()
	// Parked: one attempt per backoff (5, 10, 20, 40, 50, 50 ms...), never
	// its later rows while its head fails.
	if tries == 0 || tries > 15 {
		t.Fatalf("the suspended tenant was tried %d times in ~250ms", tries)
	}
	if len(g.got(a)) != 0 {
		t.Fatal("a suspended tenant's row was delivered")
	}
	g.resume(a)
	waitFor(t, func() bool { return len(g.got(a)) == 20 })
	if !slices.Equal(g.got(a), want(0, 20)) {
		t.Fatalf("the parked tenant's rows out of order: %v", g.got(a))
	}
	if src.skips.Load() == 0 {
		t.Fatal("the relay never left the parked tenant out of a claim")
	}
}

// TestOffboardedTenantsRowsLeaveTheHead: a tenant Gone says was offboarded
// has its rows dead-lettered at their first failure, in order; without a
// DeadLetter, GiveUpAfter drops a poison row after that many attempts and
// the tenant's next rows go on.
func TestOffboardedTenantsRowsLeaveTheHead(t *testing.T) {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	src := &skipSource{memSource: newSource(headOf(6, a, b)...)}
	g := newGate(a)
	dead := newGate()
	var scopes []bool
	var mu sync.Mutex
	dl := outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error {
		mu.Lock()
		scopes = append(scopes, tenancy.IsGlobal(ctx))
		mu.Unlock()
		return dead.Deliver(ctx, m)
	})
	r, _ := outbox.NewRelay(outbox.RelayConfig{Name: "gone", Source: src, Destination: g, DeadLetter: dl,
		Gone: func(_ context.Context, id tenancy.ID) bool { return id == a },
		Idle: time.Millisecond, WorkerConfig: shards.WorkerConfig{MaxBackoff: 5 * time.Millisecond, Logger: quiet(), Backoff: time.Millisecond}})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(dead.got(a)) == 6 && len(g.got(b)) == 6 })
	_ = r.Stop(context.Background())
	if !slices.Equal(dead.got(a), want(0, 6)) || slices.Contains(scopes, false) {
		t.Fatalf("dead letters %v (global scope each: %v)", dead.got(a), scopes)
	}
	src.mu.Lock()
	for _, m := range src.rows {
		if !src.done[m.EventID] {
			t.Errorf("%s left in the outbox", m.EventID)
		}
	}
	src.mu.Unlock()

	// A poison row, no dead letter: dropped after 3 attempts.
	src2 := &skipSource{memSource: newSource(headOf(3, a)...)}
	var tries atomic.Int32
	g2 := newGate()
	poison := outbox.DestinationFunc(func(_ context.Context, m outbox.Message) error {
		if m.EventID == "t0-000" {
			tries.Add(1)
			return errors.New("cannot decode")
		}
		return g2.Deliver(context.Background(), m)
	})
	r2, _ := outbox.NewRelay(outbox.RelayConfig{Name: "poison", Source: src2, Destination: poison, GiveUpAfter: 3,
		Idle: time.Millisecond, WorkerConfig: shards.WorkerConfig{MaxBackoff: 5 * time.Millisecond, Logger: quiet(), Backoff: time.Millisecond}})
	if err := r2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(g2.got(a)) == 2 })
	_ = r2.Stop(context.Background())
	if tries.Load() != 3 || !slices.Equal(g2.got(a), []string{"t0-001", "t0-002"}) {
		t.Fatalf("poison row tried %d times; then %v", tries.Load(), g2.got(a))
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestRelayErrorsGoToOnError: with OnError set, a failed delivery and a row
// given up on reach it, naming the tenant and event, and nothing is logged.
func TestRelayErrorsGoToOnError(t *testing.T) {
	a := tenancytest.TenantA
	src := &skipSource{memSource: newSource(headOf(1, a)...)}
	var mu sync.Mutex
	var got []string
	var logged atomic.Int32
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) { logged.Add(1); return len(p), nil }), nil))
	boom := outbox.DestinationFunc(func(context.Context, outbox.Message) error { return errors.New("sink down") })
	r, err := outbox.NewRelay(outbox.RelayConfig{Name: "errs", Source: src, Destination: boom, GiveUpAfter: 2, Idle: time.Millisecond,
		WorkerConfig: shards.WorkerConfig{Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Logger: log,
			OnError: func(err error) { mu.Lock(); got = append(got, err.Error()); mu.Unlock() }}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= 2 })
	_ = r.Stop(context.Background())
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"delivery failed; tenant parked", "gave up on a row; dropped"} {
		if !slices.ContainsFunc(got, func(s string) bool {
			return strings.Contains(s, want) && strings.Contains(s, a.String()) && strings.Contains(s, "t0-000") && strings.Contains(s, "sink down")
		}) {
			t.Fatalf("OnError got %q, want one with %q, the tenant, the event and the cause", got, want)
		}
	}
	if n := logged.Load(); n != 0 {
		t.Fatalf("%d lines logged beside OnError", n)
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestFailingDestinationOfOneTenantDelaysNoOther: a tenant whose
// destination is down (a plain error, not a refusal) has its rows at the
// head of a tenant-global relay; the other tenants' rows are delivered
// within twice their usual latency (tenancytest.Fair), and its rows once
// the destination is back, each once.
func TestFailingDestinationOfOneTenantDelaysNoOther(t *testing.T) {
	a, others := tenancytest.TenantA, []tenancy.ID{tenancytest.TenantB, tenancy.Default}
	src := &skipSource{memSource: newSource()}
	var mu sync.Mutex
	count := map[string]int{}
	down := map[tenancy.ID]bool{}
	dest := outbox.DestinationFunc(func(_ context.Context, m outbox.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if down[m.Tenant] {
			return errors.New("the tenant's endpoint is down")
		}
		count[m.EventID]++
		return nil
	})
	r, err := outbox.NewRelay(outbox.RelayConfig{Name: "fair", Source: src, Destination: dest,
		BatchSize: 5, Idle: 5 * time.Millisecond, WorkerConfig: shards.WorkerConfig{MaxBackoff: 50 * time.Millisecond, Logger: quiet(), Backoff: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Stop(context.Background()) }()
	seq := 0
	add := func(n int, ids ...tenancy.ID) []string {
		src.mu.Lock()
		defer src.mu.Unlock()
		var keys []string
		for _, id := range ids {
			for range n {
				seq++
				ev := fmt.Sprintf("ev-%04d", seq)
				src.rows = append(src.rows, outbox.Message{Tenant: id, EventID: ev})
				keys = append(keys, ev)
			}
		}
		return keys
	}
	tenancytest.Fair(t, tenancytest.Worker{
		Enqueue: func(_ context.Context, n int) ([]string, error) { return add(n, others...), nil },
		Park: func(context.Context) ([]string, error) {
			mu.Lock()
			down[a] = true
			mu.Unlock()
			return add(15, a), nil
		},
		Restore:   func(context.Context) error { mu.Lock(); defer mu.Unlock(); delete(down, a); return nil },
		Delivered: func(ev string) int { mu.Lock(); defer mu.Unlock(); return count[ev] },
	})
}
