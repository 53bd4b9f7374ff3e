package routing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Resolver returns a tenant's credentials. It is the user's function; its
// error is returned to the caller unchanged (wrapped), never papered over.
type Resolver func(ctx context.Context, tenant tenancy.ID) (Credentials, error)

// Config configures a Pools.
type Config[C any] struct {
	Resolve Resolver
	// Open builds a client for one credential set. It must not connect.
	Open func(ctx context.Context, c Credentials) (C, error)
	// Close releases a retired client; it runs once, after the drain.
	Close func(C)
	// MaxPools bounds live clients (default 64).
	MaxPools int
	// MaxTenants bounds remembered tenant bindings (default 16 × MaxPools).
	MaxTenants int
	// TTL is how long a resolution is trusted before the tenant's
	// credentials are resolved again (default 5 minutes).
	TTL time.Duration
	// Now is the clock; tests replace it.
	Now func() time.Time
}

// ErrClosed is returned by Acquire after Close.
var ErrClosed = errors.New("routing: pools closed")

// Pools routes each tenant to a client built from its own credentials.
// It is safe for concurrent use.
type Pools[C any] struct {
	cfg   Config[C]
	clock atomic.Uint64 // LRU ticks

	mu      sync.RWMutex
	closed  bool
	tenants map[tenancy.ID]*binding[C]
	pools   map[Fingerprint]*pool[C]
	live    sync.WaitGroup // pools in the map or draining; Close waits on it
}

type binding[C any] struct {
	pool       *pool[C]
	resolvedAt time.Time
	lastUsed   atomic.Uint64
}

type pool[C any] struct {
	fp       Fingerprint
	client   C
	refs     atomic.Int64
	retired  atomic.Bool
	closing  sync.Once
	tenants  int // bindings pointing here; guarded by Pools.mu
	lastUsed atomic.Uint64
}

// New validates cfg and returns an empty Pools; nothing is opened yet.
func New[C any](cfg Config[C]) (*Pools[C], error) {
	if cfg.Resolve == nil || cfg.Open == nil || cfg.Close == nil {
		return nil, errors.New("routing: Config needs Resolve, Open and Close")
	}
	if cfg.MaxPools <= 0 {
		cfg.MaxPools = 64
	}
	if cfg.MaxTenants <= 0 {
		cfg.MaxTenants = 16 * cfg.MaxPools
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 5 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Pools[C]{
		cfg:     cfg,
		tenants: make(map[tenancy.ID]*binding[C]),
		pools:   make(map[Fingerprint]*pool[C]),
	}, nil
}

// MaxPools is the bound on live clients, for connection-budget arithmetic.
func (p *Pools[C]) MaxPools() int { return p.cfg.MaxPools }

// Acquire returns the client of the tenant bound to ctx and a release
// function that must be called once the operation is done.
func (p *Pools[C]) Acquire(ctx context.Context) (C, func(), error) {
	tenant, err := tenancy.Require(ctx)
	if err != nil {
		var zero C
		return zero, nil, err
	}
	return p.AcquireFor(ctx, tenant)
}

// AcquireFor is Acquire for an explicit tenant, for provisioning and
// sharded workers that hold the tenant themselves.
func (p *Pools[C]) AcquireFor(ctx context.Context, tenant tenancy.ID) (C, func(), error) {
	var zero C
	if tenant.IsZero() {
		return zero, nil, tenancy.Unbound()
	}
	if pl, ok := p.fast(tenant); ok {
		return pl.client, p.releaser(pl), nil
	}
	creds, err := p.cfg.Resolve(ctx, tenant)
	if err != nil {
		return zero, nil, fmt.Errorf("routing: resolving credentials of tenant %s: %w", tenant, err)
	}
	pl, err := p.bind(ctx, tenant, creds)
	if err != nil {
		return zero, nil, err
	}
	return pl.client, p.releaser(pl), nil
}

// fast is the read-locked path: a fresh binding to a live pool.
func (p *Pools[C]) fast(tenant tenancy.ID) (*pool[C], bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	b, ok := p.tenants[tenant]
	if !ok || p.closed || b.pool.retired.Load() || p.cfg.Now().Sub(b.resolvedAt) >= p.cfg.TTL {
		return nil, false
	}
	tick := p.clock.Add(1)
	b.lastUsed.Store(tick)
	b.pool.lastUsed.Store(tick)
	// Retirement takes the write lock, so the pool cannot retire between
	// the check above and this increment.
	b.pool.refs.Add(1)
	return b.pool, true
}

// bind points tenant at the pool for creds, opening it when needed, and
// takes a reference on it.
func (p *Pools[C]) bind(ctx context.Context, tenant tenancy.ID, creds Credentials) (*pool[C], error) {
	fp := creds.Fingerprint()
	var opened *pool[C]
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			if opened != nil {
				p.cfg.Close(opened.client)
			}
			return nil, ErrClosed
		}
		pl, ok := p.pools[fp]
		if !ok && opened != nil {
			pl = opened
			opened = nil
			p.makeRoomForPool()
			p.pools[fp] = pl
			p.live.Add(1) // under mu and before closed is set: ordered before Close's Wait
		}
		if pl != nil {
			p.rebind(tenant, pl)
			pl.refs.Add(1)
			p.mu.Unlock()
			if opened != nil { // lost the race to open this fingerprint
				p.cfg.Close(opened.client)
			}
			return pl, nil
		}
		p.mu.Unlock()
		client, err := p.cfg.Open(ctx, creds)
		if err != nil {
			return nil, fmt.Errorf("routing: opening client for tenant %s: %w", tenant, err)
		}
		opened = &pool[C]{fp: fp, client: client}
	}
}

// rebind records tenant → pl; a tenant moving away from its old pool
// releases it, retiring it when no tenant is left. Called with mu held.
func (p *Pools[C]) rebind(tenant tenancy.ID, pl *pool[C]) {
	now := p.cfg.Now()
	tick := p.clock.Add(1)
	pl.lastUsed.Store(tick)
	if b, ok := p.tenants[tenant]; ok {
		if b.pool != pl {
			p.unref(b.pool)
			b.pool = pl
			pl.tenants++
		}
		b.resolvedAt = now
		b.lastUsed.Store(tick)
		return
	}
	// Bind first, then trim: pl then has a tenant and cannot be retired by
	// dropping the oldest binding, even when that binding was its only one.
	b := &binding[C]{pool: pl, resolvedAt: now}
	b.lastUsed.Store(tick)
	p.tenants[tenant] = b
	pl.tenants++
	if len(p.tenants) > p.cfg.MaxTenants {
		p.dropOldestTenant(tenant)
	}
}

// unref drops one binding from pl and retires it when none is left.
func (p *Pools[C]) unref(pl *pool[C]) {
	pl.tenants--
	if pl.tenants <= 0 {
		p.retire(pl)
	}
}

// retire removes pl from routing and closes it once drained. Called with
// mu held.
func (p *Pools[C]) retire(pl *pool[C]) {
	if cur, ok := p.pools[pl.fp]; ok && cur == pl {
		delete(p.pools, pl.fp)
	}
	pl.retired.Store(true)
	if pl.refs.Load() == 0 {
		p.closeOnce(pl)
	}
}

func (p *Pools[C]) closeOnce(pl *pool[C]) {
	pl.closing.Do(func() {
		go func() { // never call user code with mu held
			defer p.live.Done()
			p.cfg.Close(pl.client)
		}()
	})
}

func (p *Pools[C]) releaser(pl *pool[C]) func() {
	var once atomic.Bool
	return func() {
		if !once.CompareAndSwap(false, true) {
			return
		}
		if pl.refs.Add(-1) == 0 && pl.retired.Load() {
			p.closeOnce(pl)
		}
	}
}

// makeRoomForPool retires the least recently used pool when the bound is
// reached; its tenants resolve again on their next call. Called with mu held.
func (p *Pools[C]) makeRoomForPool() {
	if len(p.pools) < p.cfg.MaxPools {
		return
	}
	var oldest *pool[C]
	for _, pl := range p.pools {
		if oldest == nil || pl.lastUsed.Load() < oldest.lastUsed.Load() {
			oldest = pl
		}
	}
	for t, b := range p.tenants {
		if b.pool == oldest {
			delete(p.tenants, t)
		}
	}
	p.retire(oldest)
}

// dropOldestTenant forgets the least recently used binding other than
// keep's. Called with mu held.
func (p *Pools[C]) dropOldestTenant(keep tenancy.ID) {
	var (
		oldestID tenancy.ID
		oldest   *binding[C]
	)
	for id, b := range p.tenants {
		if id != keep && (oldest == nil || b.lastUsed.Load() < oldest.lastUsed.Load()) {
			oldestID, oldest = id, b
		}
	}
	if oldest != nil {
		delete(p.tenants, oldestID)
		p.unref(oldest.pool)
	}
}

// Evict forgets tenant's binding, so its next call resolves again, and
// retires its client when no other tenant shares it (after the drain).
func (p *Pools[C]) Evict(tenant tenancy.ID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.tenants[tenant]; ok {
		delete(p.tenants, tenant)
		p.unref(b.pool)
	}
}

// Stats is a snapshot of the live state.
type Stats struct{ Pools, Tenants int }

// Stats reports how many clients and tenant bindings are live.
func (p *Pools[C]) Stats() Stats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return Stats{Pools: len(p.pools), Tenants: len(p.tenants)}
}

// Close retires every client and waits until each has drained and closed,
// so it blocks while an acquired client is unreleased. Later Acquires fail
// with ErrClosed.
func (p *Pools[C]) Close() {
	p.mu.Lock()
	p.closed = true
	for _, pl := range p.pools {
		p.retire(pl)
	}
	clear(p.tenants)
	p.mu.Unlock()
	p.live.Wait()
}
