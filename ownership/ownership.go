// Package ownership is the gate in front of operations addressed by an
// opaque id (a message, job, partition or document id): before acting, it
// checks that the id belongs to the tenant bound in the context.
//
// A backend supplies the Lookup (the PostgreSQL adapter has one); the gate
// adds the policy every backend shares:
//
//   - deny by default: a lookup error means "not owned", never "allowed";
//   - cache positives only, keyed by (tenant, id); a negative may become
//     positive a moment later and is always looked up again;
//   - a cached positive stays until the gate is told otherwise: the
//     precondition is that an id's owner never changes (deleted, then
//     re-created by another tenant; reassigned) without a call to Forget
//     or ForgetTenant, made by the code that deleted or moved the id once
//     the change has committed;
//   - the cache is bounded and cleared wholesale on overflow, so request
//     traffic cannot grow it without limit;
//   - a backend that hears of changes made elsewhere (other replicas)
//     suspends the cache while it cannot (Suspend, Resume): a gate then
//     looks every id up;
//   - with tenancy off the gate short-circuits and allows everything.
package ownership

import (
	"context"
	"errors"
	"sync"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Lookup reports whether id belongs to tenant. It runs only on a cache miss.
type Lookup func(ctx context.Context, tenant tenancy.ID, id string) (bool, error)

// Config configures a Gate.
type Config struct {
	Lookup Lookup
	// MaxEntries bounds the positive cache (default 10,000).
	MaxEntries int
	// TenancyOff makes every Check succeed without a lookup.
	TenancyOff bool
}

// ErrNotOwned: the id does not belong to the bound tenant, or ownership
// could not be established. Callers report it as not found.
var ErrNotOwned = errors.New("ownership: id not owned by the bound tenant")

// Gate checks ownership. It is safe for concurrent use.
type Gate struct {
	cfg Config
	mu  sync.RWMutex
	pos map[key]struct{}
	// gen counts invalidations: a lookup that raced one is not cached,
	// since it may have read the owner that was just forgotten.
	gen uint64
	// suspended: nothing is cached (see Suspend).
	suspended bool
}

type key struct {
	tenant tenancy.ID
	id     string
}

// New returns a gate; a nil Lookup denies everything unless tenancy is off.
func New(cfg Config) *Gate {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 10_000
	}
	return &Gate{cfg: cfg, pos: make(map[key]struct{})}
}

// Check returns nil when id belongs to the tenant bound to ctx; otherwise
// tenant_unbound, or an error matching ErrNotOwned (carrying the lookup's
// error, if any). A cache hit does not allocate.
func (g *Gate) Check(ctx context.Context, id string) error {
	if g.cfg.TenancyOff {
		return nil
	}
	tenant, err := tenancy.Require(ctx)
	if err != nil {
		return err
	}
	k := key{tenant, id}
	g.mu.RLock()
	_, hit := g.pos[k]
	g.mu.RUnlock()
	if hit {
		return nil
	}
	if g.cfg.Lookup == nil {
		return ErrNotOwned
	}
	g.mu.RLock()
	gen := g.gen
	g.mu.RUnlock()
	owned, err := g.cfg.Lookup(ctx, tenant, id)
	if err != nil {
		return &denied{cause: err}
	}
	if !owned {
		return ErrNotOwned
	}
	g.mu.Lock()
	if g.gen == gen && !g.suspended {
		if len(g.pos) >= g.cfg.MaxEntries {
			clear(g.pos)
		}
		g.pos[k] = struct{}{}
	}
	g.mu.Unlock()
	return nil
}

// Forget drops the cached positive of (tenant, id): call it when tenant's
// id is deleted or moves to another owner, so the next Check looks it up
// again. A Check racing Forget does not cache what it read.
func (g *Gate) Forget(tenant tenancy.ID, id string) {
	g.mu.Lock()
	g.gen++
	delete(g.pos, key{tenant, id})
	g.mu.Unlock()
}

// ForgetTenant drops every cached positive of tenant (its data was torn
// down or moved). It walks the bounded cache.
func (g *Gate) ForgetTenant(tenant tenancy.ID) {
	g.mu.Lock()
	g.gen++
	for k := range g.pos {
		if k.tenant == tenant {
			delete(g.pos, k)
		}
	}
	g.mu.Unlock()
}

// Suspend drops every cached positive and caches none until Resume: for a
// backend whose channel of changes made elsewhere (another replica's
// deletes) is down, so that a change it cannot hear of is never answered
// from the cache. A lookup racing Suspend is not cached.
func (g *Gate) Suspend() {
	g.mu.Lock()
	g.gen++
	clear(g.pos)
	g.suspended = true
	g.mu.Unlock()
}

// Resume caches positives again once the channel is back. A lookup that
// began before Resume is not cached: it may have read an owner whose
// change was made while the channel was down.
func (g *Gate) Resume() {
	g.mu.Lock()
	g.gen++
	g.suspended = false
	g.mu.Unlock()
}

// Len is the number of cached positives.
func (g *Gate) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.pos)
}

// denied is a lookup failure turned into a denial.
type denied struct{ cause error }

func (d *denied) Error() string   { return ErrNotOwned.Error() + ": lookup failed: " + d.cause.Error() }
func (d *denied) Unwrap() []error { return []error{ErrNotOwned, d.cause} }
