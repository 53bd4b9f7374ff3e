package outbox_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// heldSource claims one row per pass for the bound tenant; a claim of
// tenant hold blocks until release closes.
type heldSource struct {
	hold    tenancy.ID
	held    chan struct{}
	release chan struct{}
	once    sync.Once
	claims  sync.Map // tenant → *atomic.Int64
}

func (s *heldSource) Claim(ctx context.Context, _ int) (outbox.Batch, error) {
	id, _ := tenancy.FromContext(ctx)
	n, _ := s.claims.LoadOrStore(id, &atomic.Int64{})
	n.(*atomic.Int64).Add(1)
	if id == s.hold {
		s.once.Do(func() { close(s.held) })
		<-s.release
	}
	return emptyBatch{}, nil
}

func (s *heldSource) count(id tenancy.ID) int64 {
	n, ok := s.claims.Load(id)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

type emptyBatch struct{}

func (emptyBatch) Messages() []outbox.Message                       { return nil }
func (emptyBatch) Complete(context.Context, []outbox.Message) error { return nil }
func (emptyBatch) Abandon(context.Context)                          {}

type nopDestination struct{}

func (nopDestination) Deliver(context.Context, outbox.Message) error { return nil }

// TestFencedRelayStopsAtTheSuspension: a sharded relay fenced by the
// app's suspensions stops a tenant's passes at its suspension, though its
// set still lists it, and an Offboard-style drain waits for the pass in
// flight; the other tenant's passes go on.
func TestFencedRelayStopsAtTheSuspension(t *testing.T) {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	s := &modules.Suspensions{}
	src := &heldSource{hold: a, held: make(chan struct{}), release: make(chan struct{})}
	r, err := outbox.NewRelay(outbox.RelayConfig{Name: "fenced", Source: src, Destination: nopDestination{}, Idle: time.Millisecond,
		WorkerConfig: shards.WorkerConfig{Tenants: func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{a, b}, nil }, Fence: s.Fence(), Backoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var let sync.Once
	letGo := func() { let.Do(func() { close(src.release) }) }
	defer func() { letGo(); _ = r.Stop(context.Background()) }()
	<-src.held // A's pass is in flight
	s.Suspend(a)
	drained := make(chan error, 1)
	go func() { drained <- s.Drain(context.Background(), a) }()
	select {
	case err := <-drained:
		t.Fatalf("the drain ended (%v) while A's pass was in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	letGo()
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	atA, atB := src.count(a), src.count(b)
	time.Sleep(100 * time.Millisecond)
	if src.count(a) != atA {
		t.Errorf("A's relay claimed %d more times after its suspension", src.count(a)-atA)
	}
	if src.count(b) == atB {
		t.Error("B's relay stopped too")
	}
}
