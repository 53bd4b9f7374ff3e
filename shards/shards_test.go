package shards_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

func id(n byte) tenancy.ID {
	return tenancy.MustParseID("00000000-0000-4000-8000-0000000000" + string("0123456789abcdef"[n>>4]) + string("0123456789abcdef"[n&15]))
}

// set is a tenant set a test changes while the group runs.
type set struct {
	mu  sync.Mutex
	ids []tenancy.ID
	err error
}

func (s *set) get(context.Context) ([]tenancy.ID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids), s.err
}

func (s *set) put(err error, ids ...tenancy.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids, s.err = ids, err
}

// recorder notes which tenants run, under which bound tenant, and lets a
// shard hold work in flight.
type recorder struct {
	mu      sync.Mutex
	running map[tenancy.ID]int
	events  []string
	hold    chan struct{} // a shard told to stop waits for it before returning
}

func (r *recorder) run(ctx context.Context, stop <-chan struct{}) {
	t, _ := tenancy.FromContext(ctx)
	r.mu.Lock()
	r.running[t]++
	r.events = append(r.events, "start "+t.String())
	r.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-stop:
		<-r.hold // in flight: finish before returning
	}
	r.mu.Lock()
	r.running[t]--
	r.events = append(r.events, "end "+t.String())
	r.mu.Unlock()
}

func (r *recorder) count(t tenancy.ID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[t]
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFollowsTheSet: one shard per tenant, bound to it; a tenant added
// while running gets its shard, a tenant removed has its shard told to
// stop and finish in flight, and comes back only once that shard is done.
func TestFollowsTheSet(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := &set{}
	s.put(nil, id(1), id(2), id(2))
	r := &recorder{running: map[tenancy.ID]int{}, hold: make(chan struct{})}
	g, err := shards.Start(context.Background(), shards.Config{Name: "w", WorkerConfig: shards.WorkerConfig{Tenants: s.get, Refresh: 10 * time.Millisecond}, Run: r.run})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "shards for 1 and 2", func() bool { return r.count(id(1)) == 1 && r.count(id(2)) == 1 })
	s.put(nil, id(2), id(3))
	eventually(t, "a shard for 3", func() bool { return r.count(id(3)) == 1 })
	// 1 is told to stop but still finishing; back in the set, it does not
	// get a second shard meanwhile.
	s.put(nil, id(1), id(2), id(3))
	time.Sleep(50 * time.Millisecond)
	if n := r.count(id(1)); n != 1 {
		t.Fatalf("tenant 1 runs %d shards while its old one drains", n)
	}
	close(r.hold)
	eventually(t, "1's shard restarted after draining", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return strings.Count(strings.Join(r.events, "\n"), "start "+id(1).String()) == 2 && r.running[id(1)] == 1
	})
	if got := g.Tenants(); len(got) != 3 {
		t.Fatalf("tenants %v", got)
	}
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, n := range []byte{1, 2, 3} {
		if r.count(id(n)) != 0 {
			t.Fatalf("tenant %d still runs after Stop", n)
		}
	}
}

// TestSetErrors: a failing set fails the start; a failing re-read keeps
// the shards of the last set; the zero tenant is refused.
func TestSetErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := &set{}
	s.put(errors.New("registry down"))
	r := &recorder{running: map[tenancy.ID]int{}, hold: make(chan struct{})}
	close(r.hold)
	if _, err := shards.Start(context.Background(), shards.Config{Name: "w", WorkerConfig: shards.WorkerConfig{Tenants: s.get}, Run: r.run}); err == nil || !strings.Contains(err.Error(), "registry down") {
		t.Fatalf("start: %v", err)
	}
	s.put(nil, tenancy.ID{})
	if _, err := shards.Start(context.Background(), shards.Config{Name: "w", WorkerConfig: shards.WorkerConfig{Tenants: s.get}, Run: r.run}); err == nil {
		t.Fatal("the zero tenant got a shard")
	}
	s.put(nil, id(1))
	g, err := shards.Start(context.Background(), shards.Config{Name: "w", WorkerConfig: shards.WorkerConfig{Tenants: s.get, Refresh: 5 * time.Millisecond}, Run: r.run})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a shard for 1", func() bool { return r.count(id(1)) == 1 })
	s.put(errors.New("registry down"))
	time.Sleep(30 * time.Millisecond)
	if r.count(id(1)) != 1 {
		t.Fatal("a failed re-read stopped the shards")
	}
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestOne: an unsharded worker's run is not bound to a tenant and has no
// stop channel; Stop ends its context and waits for it, or returns the
// stop context's error while it still runs. A nil group stops at once.
func TestOne(t *testing.T) {
	defer goleak.VerifyNone(t)
	if err := (*shards.Group)(nil).Stop(context.Background()); err != nil {
		t.Fatalf("nil group: %v", err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	var bound, hasStop bool
	g := shards.One(func(ctx context.Context, stop <-chan struct{}) {
		_, bound = tenancy.FromContext(ctx)
		hasStop = stop != nil
		close(started)
		<-ctx.Done()
		<-release
	})
	<-started
	if bound || hasStop {
		t.Fatalf("bound %v, stop channel %v: want neither", bound, hasStop)
	}
	if n := len(g.Tenants()); n != 0 {
		t.Fatalf("%d tenants", n)
	}
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.Stop(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stop while the run holds: %v", err)
	}
	close(release)
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStartWorker: without Tenants a worker runs once, unbound; with
// them, a shard per tenant; without Run it is refused either way.
func TestStartWorker(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := &recorder{running: map[tenancy.ID]int{}, hold: make(chan struct{})}
	close(r.hold)
	unbound := make(chan bool, 1)
	g, err := shards.StartWorker(context.Background(), shards.Config{Name: "w", Run: func(ctx context.Context, _ <-chan struct{}) {
		_, bound := tenancy.FromContext(ctx)
		unbound <- !bound
		<-ctx.Done()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !<-unbound {
		t.Fatal("the unsharded run is bound to a tenant")
	}
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := &set{}
	s.put(nil, id(1))
	g, err = shards.StartWorker(context.Background(), shards.Config{Name: "w", WorkerConfig: shards.WorkerConfig{Tenants: s.get}, Run: r.run})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a shard for 1", func() bool { return r.count(id(1)) == 1 })
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := shards.StartWorker(context.Background(), shards.Config{Name: "w"}); err == nil {
		t.Fatal("a worker without Run started")
	}
}
