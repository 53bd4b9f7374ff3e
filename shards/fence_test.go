package shards_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestFencedShardStopsWhenSuspended: with the app's suspensions as its
// Fence, a group following a set that still lists a tenant (the registry's
// ready tenants, which include suspended ones) stops the tenant's shard
// the moment it is suspended, with no read of the set and no restart,
// starts none for it while it stays suspended, and starts it again once
// it is resumed; an Offboard returns only after the shard's Run did.
func TestFencedShardStopsWhenSuspended(t *testing.T) {
	defer goleak.VerifyNone(t)
	a, b := id(1), id(2)
	src := &set{}
	src.put(nil, a, b)
	s := &modules.Suspensions{}
	var mu sync.Mutex
	running := map[tenancy.ID]int{}
	started := map[tenancy.ID]int{}
	g, err := shards.Start(context.Background(), shards.Config{Name: "w", WorkerConfig: shards.WorkerConfig{Tenants: src.get, Refresh: 20 * time.Millisecond, Fence: s},
		Run: func(ctx context.Context, stop <-chan struct{}) {
			id, _ := tenancy.FromContext(ctx)
			mu.Lock()
			running[id]++
			started[id]++
			mu.Unlock()
			defer func() { mu.Lock(); running[id]--; mu.Unlock() }()
			select {
			case <-stop:
			case <-ctx.Done():
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Stop(context.Background()) }()
	count := func(m map[tenancy.ID]int, id tenancy.ID) int { mu.Lock(); defer mu.Unlock(); return m[id] }
	waitFor(t, "both shards run", func() bool { return count(running, a) == 1 && count(running, b) == 1 })
	s.Suspend(a)
	waitFor(t, "A's shard stops on its suspension", func() bool { return count(running, a) == 0 })
	time.Sleep(100 * time.Millisecond) // several reads of a set that still lists A
	if count(running, a) != 0 || count(started, a) != 1 || count(running, b) != 1 {
		t.Fatalf("suspended A: running %d, started %d times; B running %d", count(running, a), count(started, a), count(running, b))
	}
	s.Resume(a)
	waitFor(t, "A's shard starts again once resumed", func() bool { return count(running, a) == 1 })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 3 s: %s", what)
		}
	}
}
