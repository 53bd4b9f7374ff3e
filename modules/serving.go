package modules

import (
	"context"
	"sync"

	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// serving is the long-running workers of tenants (a consumer's reader, a
// relay's shard): each is told to stop the moment its tenant is suspended,
// and an Offboard waits for it to have stopped. Unlike calls (Enter) they
// are few and last, so they are kept per tenant, exactly; an entry goes
// when its worker ends.
type serving struct {
	mu sync.Mutex
	by map[tenancy.ID]map[*served]struct{}
}

type served struct {
	stop, done chan struct{}
	once       sync.Once
}

// Serve registers a long-running worker of tenant, named by worker in a
// drain's error: stop closes as soon as the tenant is suspended (Suspend,
// Offboard, or a store read of LifecycleWith), and the worker then stops
// what it reads or writes and runs end, once, when nothing of it runs any
// more. An Offboard waits for end before any teardown, so no reader or
// producer of the tenant outlives it. A suspended tenant is refused with
// tenant_suspended and end is nil. A nil *Suspensions never stops a
// worker (stop is nil) and its end does nothing.
func (t *Suspensions) Serve(tenant tenancy.ID, backend, module, worker string) (stop <-chan struct{}, end func(), err error) {
	if t == nil {
		return nil, nop, nil
	}
	s := &served{stop: make(chan struct{}), done: make(chan struct{})}
	w := &t.serving
	w.mu.Lock()
	// Checked under the lock that a suspension's notice takes: either the
	// notice sees the worker, or the worker sees the suspension.
	if err := t.Check(tenant, backend, module, worker); err != nil {
		w.mu.Unlock()
		return nil, nil, err
	}
	if w.by == nil {
		w.by = map[tenancy.ID]map[*served]struct{}{}
	}
	if w.by[tenant] == nil {
		w.by[tenant] = map[*served]struct{}{}
	}
	w.by[tenant][s] = struct{}{}
	w.mu.Unlock()
	return s.stop, func() {
		s.once.Do(func() {
			w.mu.Lock()
			delete(w.by[tenant], s)
			if len(w.by[tenant]) == 0 {
				delete(w.by, tenant)
			}
			w.mu.Unlock()
			close(s.done)
		})
	}, nil
}

// notify tells the workers of every suspended tenant of set to stop.
// Called after the set is stored.
func (w *serving) notify(suspended func(tenancy.ID) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, ss := range w.by {
		if !suspended(id) {
			continue
		}
		for s := range ss {
			select {
			case <-s.stop:
			default:
				close(s.stop)
			}
		}
	}
}

// wait waits until every worker of tenants has ended, or ctx is done.
func (w *serving) wait(ctx context.Context, tenants []tenancy.ID) (int, error) {
	var done []chan struct{}
	w.mu.Lock()
	for _, id := range tenants {
		for s := range w.by[id] {
			done = append(done, s.done)
		}
	}
	w.mu.Unlock()
	for i, d := range done {
		select {
		case <-d:
		case <-ctx.Done():
			return len(done) - i, ctx.Err()
		}
	}
	return 0, nil
}

// Fence is t as a shards group's Fence: nil (no fence) for a nil t, so an
// app without Lifecycle runs its shards as before.
func (t *Suspensions) Fence() shards.Fence {
	if t == nil {
		return nil
	}
	return t
}
