package modules

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// placeKey names one tenant in one module.
type placeKey struct {
	module string
	tenant tenancy.ID
}

// fenced reports whether tenant's writes in module are fenced: by a move
// of this replica, or by the tenant's record in the store (Placed.Moving).
func (t *Suspensions) fenced(module string, tenant tenancy.ID) bool {
	if t == nil {
		return false
	}
	if f := t.fences.Load(); f != nil {
		if _, ok := (*f)[placeKey{module, tenant}]; ok {
			return true
		}
	}
	rec, ok := t.placementsOf()[tenant]
	return ok && slices.Contains(rec.Moving, module)
}

// setFence fences (or lifts the fence on) tenant's writes in module on
// this replica.
func (t *Suspensions) setFence(module string, tenant tenancy.ID, on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	next := map[placeKey]struct{}{}
	if f := t.fences.Load(); f != nil {
		next = maps.Clone(*f)
	}
	if on {
		next[placeKey{module, tenant}] = struct{}{}
	} else {
		delete(next, placeKey{module, tenant})
	}
	t.fences.Store(&next)
	t.serving.replaced()
}

// Moving is tenant_moving: a write of tenant in module while a move
// copies its data; retryable.
func Moving(tenant tenancy.ID, backend, module, route string) error {
	return &tenancy.Error{Code: tenancy.CodeTenantMoving, Backend: backend, Module: module, Route: route,
		Detail: fmt.Sprintf("tenant %s's data in module %q is being moved to another placement; nothing was written", tenant, module),
		Fix:    "retry shortly: the write is served once the move has switched the tenant (reads are served meanwhile)"}
}

// startMove marks a move of tenant in module as under way in this
// process; false when one already is.
func (t *Tenants) startMove(module string, tenant tenancy.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := placeKey{module, tenant}
	if t.moves[k] {
		return false
	}
	if t.moves == nil {
		t.moves = map[placeKey]bool{}
	}
	t.moves[k] = true
	if t.movingHere == nil {
		t.movingHere = map[tenancy.ID]int{}
	}
	t.movingHere[tenant]++
	return true
}

func (t *Tenants) endMove(module string, tenant tenancy.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.moves, placeKey{module, tenant})
	if t.movingHere[tenant]--; t.movingHere[tenant] <= 0 {
		delete(t.movingHere, tenant)
	}
}

// record writes tenant's record, changed by change, here and, with
// o.Record, to the store; then waits one refresh, so every replica has
// read it.
func (t *Tenants) record(ctx context.Context, tenant tenancy.ID, o MoveOptions, change func(*Placed)) error {
	t.updatePlaced(tenant, change)
	if o.Record == nil {
		return nil
	}
	if err := o.Record(ctx, t.Placement(tenant)); err != nil {
		return fmt.Errorf("recording tenant %s's placement in the store: %w", tenant, err)
	}
	t.mu.Lock()
	every := t.refresh
	t.mu.Unlock()
	if every <= 0 {
		return nil
	}
	select {
	case <-time.After(every):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fenceWrites fences tenant's writes in module, on every replica with
// o.Record, lists the target to as a copy of the tenant, then waits for the writes already admitted to end and for the
// workers of the module's placements that served the tenant (the fence
// stopped them). The other modules' workers serve on.
func (t *Tenants) fenceWrites(ctx context.Context, tenant tenancy.ID, module string, to tenancy.Tier, o MoveOptions) error {
	t.setFence(module, tenant, true)
	if err := t.record(ctx, tenant, o, func(p *Placed) {
		if !slices.Contains(p.Moving, module) {
			p.Moving = append(slices.Clone(p.Moving), module)
		}
		// The target holds a copy from the first row written: listed
		// before it, so that an Offboard after a cut erases it.
		p.Copies = withCopy(p.Copies, module, to, true)
	}); err != nil {
		return err
	}
	return t.drainMove(ctx, tenant, module)
}

// switchTo places tenant at to in module, its writes still fenced; the
// placement it leaves, from, holds the old copy.
func (t *Tenants) switchTo(ctx context.Context, tenant tenancy.ID, module string, from, to tenancy.Tier, o MoveOptions) error {
	return t.record(ctx, tenant, o, func(p *Placed) {
		if p.At == nil {
			p.At = map[string]tenancy.Tier{}
		}
		p.At[module] = to
		p.Copies = withCopy(withCopy(p.Copies, module, to, false), module, from, true)
	})
}

// lift lifts the fence on tenant's writes in module.
func (t *Tenants) lift(ctx context.Context, tenant tenancy.ID, module string, o MoveOptions) error {
	t.setFence(module, tenant, false)
	t.updatePlaced(tenant, func(p *Placed) {
		p.Moving = slices.DeleteFunc(slices.Clone(p.Moving), func(m string) bool { return m == module })
	})
	if o.Record == nil {
		return nil
	}
	return o.Record(ctx, t.Placement(tenant))
}

// unfence lifts the fence after a failed step and returns its error.
func (t *Tenants) unfence(ctx context.Context, tenant tenancy.ID, module string, o MoveOptions, err error) error {
	if lerr := t.lift(context.WithoutCancel(ctx), tenant, module, o); lerr != nil {
		return errors.Join(err, fmt.Errorf("lifting the write fence: %w", lerr))
	}
	return err
}
