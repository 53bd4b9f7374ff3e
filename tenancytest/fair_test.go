package tenancytest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// queue is a toy worker: one goroutine delivering items in their order,
// a millisecond each. A fair queue passes over a failing tenant's items;
// an unfair one retries the head until it succeeds.
type queue struct {
	mu      sync.Mutex
	items   []item
	count   map[string]int
	failing map[tenancy.ID]bool
	fair    bool
	seq     int
}

type item struct {
	tenant tenancy.ID
	key    string
}

func newQueue(t *testing.T, fair bool) *queue {
	q := &queue{count: map[string]int{}, failing: map[tenancy.ID]bool{}, fair: fair}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			q.step()
			time.Sleep(time.Millisecond)
		}
	}()
	return q
}

func (q *queue) step() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, it := range q.items {
		if q.failing[it.tenant] {
			if q.fair {
				continue
			}
			return
		}
		q.count[it.key]++
		q.items = append(q.items[:i], q.items[i+1:]...)
		return
	}
}

func (q *queue) add(id tenancy.ID, n int) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var keys []string
	for range n {
		q.seq++
		k := fmt.Sprintf("%s-%d", id.Hex()[:4], q.seq)
		q.items = append(q.items, item{id, k})
		keys = append(keys, k)
	}
	return keys
}

func (q *queue) worker() tenancytest.Worker {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	return tenancytest.Worker{
		Enqueue: func(context.Context, int) ([]string, error) { return q.add(b, 5), nil },
		Park: func(context.Context) ([]string, error) {
			q.mu.Lock()
			q.failing[a] = true
			q.mu.Unlock()
			return q.add(a, 5), nil
		},
		Restore: func(context.Context) error {
			q.mu.Lock()
			defer q.mu.Unlock()
			delete(q.failing, a)
			return nil
		},
		Delivered: func(k string) int { q.mu.Lock(); defer q.mu.Unlock(); return q.count[k] },
		N:         5, Rounds: 3, Timeout: 2 * time.Second,
	}
}

// TestFairPassesAFairWorkerAndFailsAnUnfairOne: a worker that passes over
// a failing tenant's items passes; one that retries its head fails.
func TestFairPassesAFairWorkerAndFailsAnUnfairOne(t *testing.T) {
	l := tenancytest.Fair(t, newQueue(t, true).worker())
	if l.Usual <= 0 || l.Parked <= 0 {
		t.Fatalf("latencies %+v", l)
	}
	failed := runWith(t, func(tb testing.TB, _ tenancytest.Probe) { tenancytest.Fair(tb, newQueue(t, false).worker()) }, tenancytest.Probe{})
	if len(failed) == 0 || !strings.Contains(strings.Join(failed, "\n"), "not delivered") {
		t.Fatalf("an unfair worker passed: %q", failed)
	}
}
