package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memSource is an in-memory outbox with claim locks, standing in for the
// database-backed sources whose own tests run on real servers.
type memSource struct {
	mu      sync.Mutex
	rows    []outbox.Message
	done    map[string]bool
	claimed map[string]bool
	claims  int
	failAt  int // fail the n-th claim (1-based); 0 never
}

func newSource(rows ...outbox.Message) *memSource {
	return &memSource{rows: rows, done: map[string]bool{}, claimed: map[string]bool{}}
}

type memBatch struct {
	s    *memSource
	msgs []outbox.Message
}

func (s *memSource) Claim(ctx context.Context, limit int) (outbox.Batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims++
	if s.claims == s.failAt {
		return nil, errors.New("connection reset")
	}
	id, bound := tenancy.FromContext(ctx)
	b := &memBatch{s: s}
	for _, m := range s.rows {
		if len(b.msgs) == limit {
			break
		}
		if s.done[m.EventID] || s.claimed[m.EventID] || (bound && m.Tenant != id) {
			continue
		}
		s.claimed[m.EventID] = true
		b.msgs = append(b.msgs, m)
	}
	return b, nil
}

func (b *memBatch) Messages() []outbox.Message { return b.msgs }
func (b *memBatch) Complete(_ context.Context, delivered []outbox.Message) error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	for _, m := range delivered {
		b.s.done[m.EventID] = true
	}
	for _, m := range b.msgs {
		delete(b.s.claimed, m.EventID)
	}
	return nil
}
func (b *memBatch) Abandon(ctx context.Context) { _ = b.Complete(ctx, nil) }

var tenants = []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB, tenancy.Default}

func rows(n int) []outbox.Message {
	var out []outbox.Message
	for i := range n {
		out = append(out, outbox.Message{Tenant: tenants[i%3], EventID: fmt.Sprintf("e%03d", i), Payload: []byte(tenants[i%3].String())})
	}
	return out
}

// recorder delivers, checking each message arrives bound to its own tenant.
type recorder struct {
	mu     sync.Mutex
	got    map[string]int
	wrong  []string
	failOn map[string]int // event id -> failures left
}

func (r *recorder) Deliver(ctx context.Context, m outbox.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failOn[m.EventID] > 0 {
		r.failOn[m.EventID]--
		return errors.New("destination down")
	}
	if id, ok := tenancy.FromContext(ctx); !ok || id != m.Tenant || string(m.Payload) != id.String() {
		r.wrong = append(r.wrong, m.EventID)
	}
	r.got[m.EventID]++
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRelayBindsEachRowsTenantAcrossFailures(t *testing.T) {
	src := newSource(rows(90)...)
	src.failAt = 2
	dest := &recorder{got: map[string]int{}, failOn: map[string]int{"e010": 2, "e050": 1}}
	var relays []*outbox.Relay
	for i := range 2 { // two relays side by side
		r, err := outbox.NewRelay(outbox.RelayConfig{Name: fmt.Sprint("r", i), Source: src, Destination: dest,
			BatchSize: 7, Idle: time.Millisecond, WorkerConfig: shards.WorkerConfig{MaxBackoff: 5 * time.Millisecond, Backoff: time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		relays = append(relays, r)
	}
	waitFor(t, func() bool { return dest.count() == 90 })
	for _, r := range relays {
		if err := r.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(dest.wrong) > 0 {
		t.Fatalf("rows delivered under the wrong tenant: %v", dest.wrong)
	}
	for id, n := range dest.got {
		if n != 1 {
			t.Errorf("event %s delivered %d times in normal operation", id, n)
		}
	}
}

func TestShardedRelay(t *testing.T) {
	src := newSource(rows(30)...)
	dest := &recorder{got: map[string]int{}}
	r, _ := outbox.NewRelay(outbox.RelayConfig{Name: "sharded", Source: src, Destination: dest, Idle: time.Millisecond,
		WorkerConfig: shards.WorkerConfig{Tenants: func(context.Context) ([]tenancy.ID, error) { return tenants[:2], nil }, Backoff: time.Millisecond}})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return dest.count() == 20 })
	time.Sleep(20 * time.Millisecond)
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if dest.count() != 20 || len(dest.wrong) > 0 {
		t.Fatalf("sharded relay over two tenants delivered %d (wrong %v); the third tenant's rows must wait", dest.count(), dest.wrong)
	}

	failing, _ := outbox.NewRelay(outbox.RelayConfig{Name: "x", Source: src, Destination: dest,
		WorkerConfig: shards.WorkerConfig{Tenants: func(context.Context) ([]tenancy.ID, error) { return nil, errors.New("directory down") }}})
	if err := failing.Start(context.Background()); err == nil {
		t.Fatal("a failing tenant provider did not fail start")
	}
}

// A source that hands a sharded pass another tenant's row is refused.
type leakySource struct{ memSource }

func (s *leakySource) Claim(ctx context.Context, limit int) (outbox.Batch, error) {
	return s.memSource.Claim(context.Background(), limit)
}

func TestShardedPassRefusesForeignRows(t *testing.T) {
	src := &leakySource{*newSource(rows(3)...)}
	dest := &recorder{got: map[string]int{}}
	r, _ := outbox.NewRelay(outbox.RelayConfig{Source: src, Destination: dest})
	_, err := r.Pass(tenancy.WithTenant(context.Background(), tenancytest.TenantB))
	if err == nil || dest.count() != 0 {
		t.Fatalf("pass of B forwarded A's row: err=%v delivered=%d", err, dest.count())
	}
}
