package modules

import (
	"context"
	"fmt"
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
	// module and keep are set for a worker of one placement of a module
	// (ServeAt): keep reports whether the tenant is still placed there
	// with its writes unfenced, and a move of the tenant in module waits
	// for the worker to end.
	module string
	keep   func() bool
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
	return t.serve(tenant, backend, module, worker, nil)
}

// serve is Serve; at, when set, is the placement the worker serves.
func (t *Suspensions) serve(tenant tenancy.ID, backend, module, worker string, at *Placement) (stop <-chan struct{}, end func(), err error) {
	s := &served{stop: make(chan struct{}), done: make(chan struct{})}
	if at != nil {
		s.module, s.keep = at.Module, func() bool { return t.placedAt(at, tenant) }
	}
	w := &t.serving
	w.mu.Lock()
	// Checked under the lock that a suspension's (or a placement's)
	// notice takes: either the notice sees the worker, or the worker sees
	// the change.
	err = t.Check(tenant, backend, module, worker)
	if err == nil && s.keep != nil && !s.keep() {
		err = t.notPlacedAt(at, tenant, worker)
	}
	if err != nil {
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
			s.halt()
		}
	}
}

// replaced tells the workers of a placement to stop whose tenant is no
// longer placed there or whose writes a move fences. Called after the
// placements or the fences are stored.
func (w *serving) replaced() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ss := range w.by {
		for s := range ss {
			if s.keep != nil && !s.keep() {
				s.halt()
			}
		}
	}
}

func (s *served) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
}

// wait waits until every worker of tenants has ended, or ctx is done.
func (w *serving) wait(ctx context.Context, tenants []tenancy.ID) (int, error) {
	return w.waitFor(ctx, tenants, func(*served) bool { return true })
}

// waitIn waits until the workers of tenant's placements in module have
// ended, or ctx is done: what a move of the tenant in module waits for,
// the other modules' workers serving on.
func (w *serving) waitIn(ctx context.Context, tenant tenancy.ID, module string) (int, error) {
	return w.waitFor(ctx, []tenancy.ID{tenant}, func(s *served) bool { return s.keep != nil && s.module == module })
}

func (w *serving) waitFor(ctx context.Context, tenants []tenancy.ID, which func(*served) bool) (int, error) {
	var done []chan struct{}
	w.mu.Lock()
	for _, id := range tenants {
		for s := range w.by[id] {
			if which(s) {
				done = append(done, s.done)
			}
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

// ServeAt is the Fence of a worker of the placement at of a module that
// offers several: besides suspensions, it serves a tenant only while the
// tenant is placed at at.At in at.Module with its writes there unfenced.
// A move of the tenant stops the worker when it fences the tenant's
// writes and waits for it before copying, and the worker of the new
// placement takes the tenant on its next read of its set once the fence
// is lifted.
//
// Without suspensions (an app without Lifecycle) no tenant has a record,
// so every tenant is at the offer's default: the default placement's
// worker serves them all and the others none.
func (t *Suspensions) ServeAt(at Placement) shards.Fence { return placedFence{t, at} }

type placedFence struct {
	t  *Suspensions
	at Placement
}

func (f placedFence) Serve(tenant tenancy.ID, backend, module, worker string) (<-chan struct{}, func(), error) {
	if f.t == nil {
		if f.at.At != f.at.Offer.Default {
			return nil, nil, (*Suspensions)(nil).notPlacedAt(&f.at, tenant, worker)
		}
		return nil, nop, nil
	}
	return f.t.serve(tenant, backend, module, worker, &f.at)
}

// placedAt reports whether tenant is served at p: placed there (a record
// under the tenant's plan places it nowhere) and not being moved.
func (t *Suspensions) placedAt(p *Placement, tenant tenancy.ID) bool {
	at, err := t.place(&p.Offer, tenant, "", p.Module, "")
	return err == nil && at == p.At && !t.fenced(p.Module, tenant)
}

// notPlacedAt is why a placement's worker does not serve tenant: a move
// fences it (tenant_moving), or it is placed elsewhere.
func (t *Suspensions) notPlacedAt(p *Placement, tenant tenancy.ID, worker string) error {
	if t.fenced(p.Module, tenant) {
		return Moving(tenant, "", p.Module, worker)
	}
	return &tenancy.Error{Code: tenancy.CodeTenantPlacementInvalid, Module: p.Module, Route: worker, Tiers: true, Required: p.At,
		Detail: fmt.Sprintf("tenant %s is not placed at %s in module %q: the worker of its own placement serves it", tenant, p.At, p.Module),
		Fix:    "nothing to do: the worker follows the tenant's placement"}
}
