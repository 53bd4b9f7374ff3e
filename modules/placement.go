package modules

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Placed is one tenant's record in the app's store: its plan (the tier it
// must be served at; None for no plan) and its placement in each module
// that offers more than one. A module the record does not name serves the
// tenant at the module's default placement.
//
// Plan and placements travel as one record so that a replica never holds
// a plan newer than the placement it goes with: raise a plan only once the
// tenant is placed at or above it, and lower a placement only once the
// plan allows it.
type Placed struct {
	Tenant tenancy.ID
	Plan   tenancy.Tier
	At     map[string]tenancy.Tier
	// Moving lists the modules in which a move copies the tenant's data:
	// its writes there are refused (tenant_moving) until the move lifts
	// the fence; its reads are served.
	Moving []string
	// Copies lists, per module, the placements other than At that may hold
	// a copy of the tenant's data: the old copy a move leaves until
	// CleanupMove, and the target of a move under way or cut off. Offboard
	// erases and verifies them too. Persist it with the record.
	Copies map[string][]tenancy.Tier
}

// placements is an immutable snapshot of every tenant's record, swapped
// whole, so the call entry reads it with one atomic load and no lock.
type placements map[tenancy.ID]Placed

// placementsOf reads the current snapshot; nil when nothing is recorded.
func (t *Suspensions) placementsOf() placements {
	if t == nil {
		return nil
	}
	p := t.placed.Load()
	if p == nil {
		return nil
	}
	return *p
}

// Placement is tenant's record: its plan and its placements (a copy).
func (t *Suspensions) Placement(tenant tenancy.ID) Placed {
	rec, ok := t.placementsOf()[tenant]
	if !ok {
		return Placed{Tenant: tenant}
	}
	return rec.Clone()
}

// Clone is a deep copy of p, which shares no map or slice with it: what a
// store keeps of a record it is given.
func (p Placed) Clone() Placed {
	p.At, p.Moving, p.Copies = maps.Clone(p.At), slices.Clone(p.Moving), clonedCopies(p.Copies)
	return p
}

// clonedCopies is a deep copy of c.
func clonedCopies(c map[string][]tenancy.Tier) map[string][]tenancy.Tier {
	if c == nil {
		return nil
	}
	out := make(map[string][]tenancy.Tier, len(c))
	for m, tiers := range c {
		out[m] = slices.Clone(tiers)
	}
	return out
}

// withCopy is copies with at added to module's (once) or, when !add,
// removed from it.
func withCopy(copies map[string][]tenancy.Tier, module string, at tenancy.Tier, add bool) map[string][]tenancy.Tier {
	out := clonedCopies(copies)
	if out == nil {
		out = map[string][]tenancy.Tier{}
	}
	tiers := slices.DeleteFunc(out[module], func(t tenancy.Tier) bool { return t == at })
	if add {
		tiers = append(tiers, at)
	}
	if len(tiers) == 0 {
		delete(out, module)
	} else {
		out[module] = tiers
	}
	return out
}

// Place records tenant's placement in module on this replica (LifecycleWith's
// Placed makes every replica follow the store). It moves no data: a
// tenant's placement changes with its containers, which provisioning at
// the new placement creates (see docs/tiered-tenancy.md).
func (t *Suspensions) Place(tenant tenancy.ID, module string, at tenancy.Tier) {
	t.updatePlaced(tenant, func(p *Placed) {
		if p.At == nil {
			p.At = map[string]tenancy.Tier{}
		}
		p.At[module] = at
	})
}

// SetPlan records the tier tenant must be served at in every module that
// offers placements: a call that would serve it from a weaker placement
// fails with tenant_placement_under_floor.
func (t *Suspensions) SetPlan(tenant tenancy.ID, plan tenancy.Tier) {
	t.updatePlaced(tenant, func(p *Placed) { p.Plan = plan })
}

func (t *Suspensions) updatePlaced(tenant tenancy.ID, change func(*Placed)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.placementsOf()
	next := make(placements, len(cur)+1)
	maps.Copy(next, cur)
	rec := next[tenant]
	rec.Tenant, rec.At, rec.Copies = tenant, maps.Clone(rec.At), clonedCopies(rec.Copies)
	change(&rec)
	next[tenant] = rec
	t.placed.Store(&next)
	t.serving.replaced()
}

// followPlaced makes the store's records the placements (LifecycleWith),
// but for a tenant this process is moving: a read of the store taken
// before the move wrote its last step would undo that step here, and the
// move's next record, built on it, would write the undoing to the store.
func (t *Suspensions) followPlaced(recs []Placed) {
	next := make(placements, len(recs))
	for _, r := range recs {
		r.At, r.Copies = maps.Clone(r.At), clonedCopies(r.Copies)
		next[r.Tenant] = r
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.movingHere) > 0 {
		cur := t.placementsOf()
		for tenant := range t.movingHere {
			if rec, ok := cur[tenant]; ok {
				next[tenant] = rec
			} else {
				delete(next, tenant)
			}
		}
	}
	t.placed.Store(&next)
	t.serving.replaced()
}

// Offer is the placements a module offers its tenants: the tiers, and the
// one a tenant with no record is served at.
type Offer struct {
	Tiers   []tenancy.Tier
	Default tenancy.Tier
}

// Weakest is the weakest tier offered: what the module's routes reach for
// the tenants served there, and so what the wiring checks.
func (o Offer) Weakest() tenancy.Tier { return slices.Min(o.Tiers) }

// Offers reports whether at is one of the offer's tiers.
func (o Offer) Offers(at tenancy.Tier) bool { return slices.Contains(o.Tiers, at) }

// Problem is what is wrong with the offer, or "" when nothing is.
func (o Offer) Problem() string {
	switch {
	case len(o.Tiers) < 2:
		return "a module with placements offers at least two tiers"
	case !o.Offers(o.Default):
		return fmt.Sprintf("the default placement %s is not one of the tiers offered %v", o.Default, o.Tiers)
	}
	for i, a := range o.Tiers {
		if a == tenancy.None || !a.Valid() {
			return fmt.Sprintf("%s is not a placement: offer tagged, namespace or dedicated", a)
		}
		if slices.Contains(o.Tiers[i+1:], a) {
			return fmt.Sprintf("%s is offered twice", a)
		}
	}
	return ""
}

// place is the call entry's placement step: the tier tenant is served at
// in module, refused when the record names a tier the module does not
// offer (tenant_placement_invalid) or one under the tenant's plan
// (tenant_placement_under_floor). Fails closed: a record the module cannot
// honour serves nothing.
func (t *Suspensions) place(o *Offer, tenant tenancy.ID, backend, module, route string) (tenancy.Tier, error) {
	rec, ok := t.placementsOf()[tenant]
	at := o.Default
	if ok {
		if a, named := rec.At[module]; named {
			at = a
		}
	}
	if !o.Offers(at) {
		return at, &tenancy.Error{Code: tenancy.CodeTenantPlacementInvalid, Backend: backend, Module: module, Route: route, Tiers: true, Reached: at,
			Detail: fmt.Sprintf("tenant %s is recorded at %s in module %q, which offers %v; nothing was read or written", tenant, at, module, o.Tiers),
			Fix:    "record one of the module's placements for the tenant (Tenants.Place, or its record in the store LifecycleWith reads)"}
	}
	if ok && !at.AtLeast(rec.Plan) {
		return at, &tenancy.Error{Code: tenancy.CodeTenantPlacementUnderFloor, Backend: backend, Module: module, Route: route, Tiers: true, Reached: at, Required: rec.Plan,
			Detail: fmt.Sprintf("tenant %s's plan requires %s and module %q holds it at %s; nothing was read or written", tenant, rec.Plan, module, at),
			Fix:    fmt.Sprintf("provision the tenant at %s or above and record that placement, or lower its plan", rec.Plan)}
	}
	return at, nil
}

// PlacementOf is the tier tenant is served at in module under o, checked
// as the call entry checks it: what a backend's provisioning and
// teardown use to find the tenant's containers.
func (t *Suspensions) PlacementOf(o Offer, tenant tenancy.ID, backend, module string) (tenancy.Tier, error) {
	return t.place(&o, tenant, backend, module, "")
}

// placedRef is the atomic snapshot pointer held by Suspensions.
type placedRef = atomic.Pointer[placements]

// Placement marks a TenantState (and its routes) as one placement of a
// module that offers several: the state holds Module's tenants placed At
// under Offer, and Tenants runs its steps for those tenants only.
type Placement struct {
	Module string
	At     tenancy.Tier
	Offer  Offer
}

// holds reports whether s holds tenant: a state of no placement holds
// every tenant; a placed one, the tenants the records place at its tier
// (a record the module cannot honour places the tenant nowhere).
func (t *Suspensions) holds(s *TenantState, tenant tenancy.ID) bool {
	p := s.Placement
	if p == nil {
		return true
	}
	at, err := t.PlacementOf(p.Offer, tenant, s.Backend, p.Module)
	return at == p.At && (err == nil || tenancy.CodeOf(err) == tenancy.CodeTenantPlacementUnderFloor)
}

// mayHold reports whether s may hold data of tenant: it holds the tenant,
// or the tenant's record lists a copy at s's placement (Placed.Copies).
// What Offboard erases and verifies.
func (t *Suspensions) mayHold(s *TenantState, tenant tenancy.ID) bool {
	if t.holds(s, tenant) {
		return true
	}
	rec := t.placementsOf()[tenant]
	return slices.Contains(rec.Copies[s.Placement.Module], s.Placement.At)
}

// forgetCopies unlists every copy of tenant on this replica, once an
// Offboard erased and verified them all.
func (t *Suspensions) forgetCopies(tenant tenancy.ID) {
	if len(t.placementsOf()[tenant].Copies) > 0 {
		t.updatePlaced(tenant, func(p *Placed) { p.Copies = nil })
	}
}

// placedElsewhere is the report line of a placed state that does not hold
// tenant.
func placedElsewhere(s *TenantState) string {
	return fmt.Sprintf("the tenant is not placed at %s in module %q", s.Placement.At, s.Placement.Module)
}

// checkPlacements refuses to provision tenant when a module that offers
// placements cannot honour its record, or holds it under its plan.
func (t *Tenants) checkPlacements(tenant tenancy.ID) error {
	for _, s := range t.states {
		if p := s.Placement; p != nil {
			if _, err := t.PlacementOf(p.Offer, tenant, s.Backend, p.Module); err != nil {
				return err
			}
		}
	}
	return nil
}

// mayHoldOf keeps, of ids (and their positions at), those s may hold
// data of (mayHold): what an offboard of many tenants erases there.
func (t *Tenants) mayHoldOf(s *TenantState, ids []tenancy.ID, at []int) ([]tenancy.ID, []int) {
	var keptIDs []tenancy.ID
	var keptAt []int
	for j, id := range ids {
		if t.mayHold(s, id) {
			keptIDs, keptAt = append(keptIDs, id), append(keptAt, at[j])
		}
	}
	return keptIDs, keptAt
}

// Placer is the call step of a route object that serves a module's
// tenants from one route per placement: it picks the route of the
// tenant's placement, whose own entry then runs every check of the call.
type Placer struct {
	backend, module string
	offer           Offer
	susp            *Suspensions
}

// NewPlacer is the placer of module's offer o, reading the records of s.
func NewPlacer(backend, module string, o Offer, s *Suspensions) *Placer {
	return &Placer{backend: backend, module: module, offer: o, susp: s}
}

// At is the tier of the tenant ctx binds, refused as the call entry
// refuses (tenant_placement_invalid, tenant_placement_under_floor) for
// route. A call with no tenant bound gets the default, and a suspended
// tenant its placement (the default if its record cannot be honoured):
// that route's entry then refuses it with tenant_unbound or
// tenant_suspended, which come first. A write is held in flight until
// the caller runs end, so a move's fence waits for it, and is refused
// with tenant_moving while a move fences the tenant's writes; a read's
// end does nothing.
func (p *Placer) At(ctx context.Context, route string, write bool) (at tenancy.Tier, end func(), err error) {
	id, bound := tenancy.FromContext(ctx)
	if !bound {
		return p.offer.Default, nop, nil
	}
	at, err = p.susp.place(&p.offer, id, p.backend, p.module, route)
	if err != nil {
		if p.susp.Suspended(id) {
			return p.offer.Default, nop, nil
		}
		return at, nil, err
	}
	if !write {
		return at, nop, nil
	}
	// Held first, then the fence read: a move either sees the write in
	// flight (and waits for it) or the write sees the fence.
	end, err = p.susp.Enter(id, p.backend, p.module, route)
	if err != nil {
		return at, nop, nil // suspended: the route's entry refuses it
	}
	if p.susp.fenced(p.module, id) {
		end()
		return at, nil, Moving(id, p.backend, p.module, route)
	}
	return at, end, nil
}

// holderOf is the state of module's placement that holds tenant.
func (t *Tenants) holderOf(module string, tenant tenancy.ID) *TenantState {
	for _, s := range t.placementsIn(module) {
		if t.holds(s, tenant) {
			return s
		}
	}
	return nil
}
