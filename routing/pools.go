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

// Limits bound a routed module's per-tenant clients. Every backend's
// routed option takes them, so each limit has one name and one default.
type Limits struct {
	// MaxClients bounds clients that are open or still closing (default
	// 64), one per tenant: opening one more waits for a slot.
	MaxClients int
	// MaxConnsPerClient caps each client's connections (the backend's
	// default when zero). MaxClients × MaxConnsPerClient is a hard limit,
	// the module's worst case that ConnBudget checks.
	MaxConnsPerClient int
	// MaxTenants bounds remembered tenant bindings (default 16 × MaxClients).
	MaxTenants int
	// TTL is how long a resolution is trusted before the tenant's
	// credentials are resolved again (default 5 minutes).
	TTL time.Duration
	// MaxWait bounds how long opening a client waits for a slot, on top of
	// the caller's context (default 10 seconds).
	MaxWait time.Duration
}

// WithDefaults is l with every unset limit at its default; perClient is
// the backend's default MaxConnsPerClient.
func (l Limits) WithDefaults(perClient int) Limits {
	if l.MaxClients <= 0 {
		l.MaxClients = 64
	}
	if l.MaxConnsPerClient <= 0 {
		l.MaxConnsPerClient = perClient
	}
	if l.MaxTenants <= 0 {
		l.MaxTenants = 16 * l.MaxClients
	}
	if l.TTL <= 0 {
		l.TTL = 5 * time.Minute
	}
	if l.MaxWait <= 0 {
		l.MaxWait = 10 * time.Second
	}
	return l
}

// Config configures a Pools.
type Config[C any] struct {
	Resolve Resolver
	// Open builds a client for one credential set. It must not connect.
	Open func(ctx context.Context, c Credentials) (C, error)
	// Read, when set, stands for Targets and Open together, for a backend
	// that would otherwise read each credential set twice per new client
	// (a DSN parsed for the targets, then again to open): it reads them
	// once, and the Reading's Open is called only if a client is opened.
	Read func(Credentials) (Reading[C], error)
	// Close releases a retired client; it runs once, after the drain.
	Close func(C)
	// Targets names where the data of a credential set may live (each
	// host of a host list with its port and database; each broker),
	// independent of user and secret, each in one canonical form. Two
	// tenants whose credentials share a target are refused
	// (dedicated_target_shared) before anything is opened. Required unless
	// TenantKeyed.
	Targets func(Credentials) ([]string, error)
	// Identify asks the server behind a newly opened client who it is: an
	// identity that every spelling of one target reports alike and two
	// targets never do (a cluster id and a database id). A tenant is
	// bound to a new client only once that identity is claimed, so two
	// tenants whose credentials spell one target differently are refused
	// before either's data is read or written. It may connect; it runs
	// once per client, never per call. Optional: without it the names
	// from Targets decide alone.
	Identify func(ctx context.Context, client C) (string, error)
	// TargetNoun names a target in refusals ("database", "cluster").
	TargetNoun string
	// TenantKeyed declares that every name the client touches carries the
	// tenant, so tenants on one target cannot meet: no claims are taken,
	// and tenants with identical credentials share one client.
	TenantKeyed bool
	// Module and Backend name the client in refusals.
	Module, Backend string
	// Limits bound the clients; MaxConnsPerClient is the backend's to
	// apply when it opens one.
	Limits
	// now is the clock; tests replace it (export_test.go).
	now func() time.Time
}

// Reading is one reading of a credential set (Config.Read): the targets
// it names, as Config.Targets gives them, and how to open a client for it,
// as Config.Open does.
type Reading[C any] struct {
	Targets []string
	Open    func(ctx context.Context) (C, error)
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
	pools   map[poolKey]*pool[C]
	held    map[tenancy.ID]claimSet // this Pools' claims, kept past eviction
	// used counts slots: clients opening, open or closing, the hard bound
	// behind a connection budget. waiters queue for one, first come first
	// served; draining counts retired clients not closed yet.
	used     int
	waiters  []chan struct{}
	draining int
	live     sync.WaitGroup // clients holding a slot; Close waits on it
	// retiredN counts clients retired (LRU, Evict, rotation, Close), for
	// the evictions metric.
	retiredN atomic.Int64
}

// poolKey identifies a client. With claims, the tenant is part of it: a
// client never serves two tenants even if two resolved alike.
type poolKey struct {
	tenant tenancy.ID
	fp     fingerprint
}

type binding[C any] struct {
	pool       *pool[C]
	resolvedAt time.Time
	lastUsed   atomic.Uint64
}

type pool[C any] struct {
	key      poolKey
	client   C
	refs     atomic.Int64
	retired  atomic.Bool
	closing  sync.Once
	tenants  int // bindings pointing here; guarded by Pools.mu
	lastUsed atomic.Uint64
	// server is what Identify reported, set before the pool is published.
	server serverIdentity
	// claims are the tenant's claims this client holds itself, from its
	// publication until it has closed: a tenant that moved to another
	// target still reaches the old one through a client acquired before
	// the move (a consumer holds one for its whole run), so no other
	// tenant may take that target before the client is gone.
	claims []claimKey
}

// New validates cfg and returns an empty Pools; nothing is opened yet.
func New[C any](cfg Config[C]) (*Pools[C], error) {
	if cfg.Resolve == nil || (cfg.Open == nil && cfg.Read == nil) || cfg.Close == nil {
		return nil, errors.New("routing: Config needs Resolve, Open (or Read) and Close")
	}
	if cfg.Targets == nil && cfg.Read == nil && !cfg.TenantKeyed {
		return nil, errors.New("routing: Config needs Targets (or Read), or TenantKeyed when every name carries the tenant")
	}
	cfg.Limits = cfg.WithDefaults(cfg.MaxConnsPerClient)
	if cfg.now == nil {
		cfg.now = time.Now
	}
	p := &Pools[C]{
		cfg:     cfg,
		tenants: make(map[tenancy.ID]*binding[C]),
		pools:   make(map[poolKey]*pool[C]),
		held:    make(map[tenancy.ID]claimSet),
	}
	observed.Store(p, observedPools{module: cfg.Module, backend: cfg.Backend, stats: p.Stats})
	return p, nil
}

// MaxClients is the bound on clients, for connection-budget arithmetic.
func (p *Pools[C]) MaxClients() int { return p.cfg.MaxClients }

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
	if !ok || p.closed || b.pool.retired.Load() || p.cfg.now().Sub(b.resolvedAt) >= p.cfg.TTL {
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
// takes a reference on it. With claims, the named targets are checked
// before anything is opened, and every claim (the server's identity
// included) is taken atomically with the binding.
func (p *Pools[C]) bind(ctx context.Context, tenant tenancy.ID, creds Credentials) (*pool[C], error) {
	key := poolKey{fp: creds.fingerprint()}
	var named claimSet
	claims := !p.cfg.TenantKeyed
	rd, err := p.read(creds)
	if err != nil {
		return nil, fmt.Errorf("routing: credentials of tenant %s: %w", tenant, err)
	}
	if claims {
		if named, err = p.namedClaims(rd.Targets); err != nil {
			return nil, fmt.Errorf("routing: credentials of tenant %s: %w", tenant, err)
		}
		key.tenant = tenant
	}
	var opened *pool[C]
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			p.discard(opened)
			return nil, ErrClosed
		}
		pl, ok := p.pools[key]
		if !ok && opened != nil {
			pl = opened
		}
		if claims {
			// With a client at hand the claims are taken, under mu, in
			// the same step as the binding; before opening one they are
			// only looked at, so a refused tenant opens nothing.
			var err error
			if pl != nil {
				err = p.claimFor(tenant, named.withServer(pl.server))
			} else {
				err = p.claimLook(tenant, named)
			}
			if err != nil {
				p.mu.Unlock()
				p.discard(opened)
				return nil, err
			}
		}
		if pl != nil {
			if pl == opened {
				if claims {
					pl.claims = named.withServer(pl.server).keys()
					holdClaims(pl.claims, tenant) // taken by claimFor above
				}
				p.pools[key] = pl
				opened = nil
			}
			p.rebind(tenant, pl)
			pl.refs.Add(1)
			// Callers may have queued while this client was opening, with
			// nothing live to retire for them then.
			p.makeRoom()
			p.mu.Unlock()
			p.discard(opened) // lost the race to open this key
			return pl, nil
		}
		p.mu.Unlock()
		if opened, err = p.open(ctx, tenant, key, rd.Open); err != nil {
			return nil, err
		}
	}
}

// read reads creds once for bind: with Read, its Reading; otherwise the
// targets from Targets (claims only) and an opener calling Open, so that a
// TenantKeyed Pools still reports a bad credential set from Open.
func (p *Pools[C]) read(creds Credentials) (Reading[C], error) {
	if p.cfg.Read != nil {
		return p.cfg.Read(creds)
	}
	rd := Reading[C]{Open: func(ctx context.Context) (C, error) { return p.cfg.Open(ctx, creds) }}
	if !p.cfg.TenantKeyed {
		var err error
		if rd.Targets, err = p.cfg.Targets(creds); err != nil {
			return Reading[C]{}, err
		}
	}
	return rd, nil
}

// open takes a slot and builds a client with openClient; the slot is
// returned when the client has closed.
func (p *Pools[C]) open(ctx context.Context, tenant tenancy.ID, key poolKey, openClient func(context.Context) (C, error)) (*pool[C], error) {
	if err := p.takeSlot(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.freeSlot()
		p.mu.Unlock()
		return nil, ErrClosed
	}
	p.live.Add(1) // under mu and before closed is set: ordered before Close's Wait
	p.mu.Unlock()
	client, err := openClient(ctx)
	if err != nil {
		p.mu.Lock()
		p.freeSlot()
		p.mu.Unlock()
		p.live.Done()
		return nil, fmt.Errorf("routing: opening client for tenant %s: %w", tenant, err)
	}
	pl := &pool[C]{key: key, client: client}
	if p.cfg.Identify != nil && !p.cfg.TenantKeyed {
		id, err := p.cfg.Identify(ctx, client)
		if err == nil && id == "" {
			err = errors.New("the server reported an empty identity")
		}
		if err != nil {
			p.discard(pl)
			return nil, fmt.Errorf("routing: asking the server of tenant %s who it is: %w", tenant, err)
		}
		pl.server = serverIdentity{key: claimKeyOf(p.cfg.Backend, claimServer, id), label: id, known: true}
	}
	return pl, nil
}

// discard closes a client that was opened but never published.
func (p *Pools[C]) discard(pl *pool[C]) {
	if pl == nil {
		return
	}
	p.mu.Lock()
	pl.retired.Store(true)
	p.draining++
	p.mu.Unlock()
	p.closeOnce(pl)
}

// rebind records tenant → pl; a tenant moving away from its old pool
// releases it, retiring it when no tenant is left. Called with mu held.
func (p *Pools[C]) rebind(tenant tenancy.ID, pl *pool[C]) {
	now := p.cfg.now()
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
	if cur, ok := p.pools[pl.key]; ok && cur == pl {
		delete(p.pools, pl.key)
	}
	if !pl.retired.Swap(true) {
		p.draining++
		p.retiredN.Add(1)
	}
	if pl.refs.Load() == 0 {
		p.closeOnce(pl)
	}
}

// closeOnce closes pl off the lock and then frees its slot: the slot
// counts the client's connections until Close has returned.
func (p *Pools[C]) closeOnce(pl *pool[C]) {
	pl.closing.Do(func() {
		go func() { // never call user code with mu held
			defer p.live.Done()
			p.cfg.Close(pl.client)
			dropClaims(pl.claims)
			p.mu.Lock()
			p.draining--
			p.freeSlot()
			p.mu.Unlock()
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
// retires its client (after the drain). The tenant keeps its claim on its
// target: an evicted tenant's data is still there, so no other tenant may
// take the target until this tenant resolves to another one and every
// client it had there has closed.
func (p *Pools[C]) Evict(tenant tenancy.ID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.tenants[tenant]; ok {
		delete(p.tenants, tenant)
		p.unref(b.pool)
	}
}

// Stats is a snapshot of the live state: Pools live clients, Clients
// slots in use (open, opening or closing) out of MaxClients, Tenants
// bindings, Claims targets claimed, Retired clients retired so far.
type Stats struct {
	Pools, Clients, Tenants, Claims int
	MaxClients                      int
	Retired                         int64
}

// Stats reports the live state.
func (p *Pools[C]) Stats() Stats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return Stats{Pools: len(p.pools), Clients: p.used, Tenants: len(p.tenants), Claims: len(p.held),
		MaxClients: p.cfg.MaxClients, Retired: p.retiredN.Load()}
}

// Close retires every client, releases this Pools' claims and waits until
// each client has drained and closed, so it blocks while an acquired
// client is unreleased. Later Acquires fail with ErrClosed.
func (p *Pools[C]) Close() {
	p.mu.Lock()
	p.closed = true
	for _, pl := range p.pools {
		p.retire(pl)
	}
	clear(p.tenants)
	var keys []claimKey
	for _, s := range p.held {
		keys = append(keys, s.keys()...)
	}
	clear(p.held)
	p.mu.Unlock()
	observed.Delete(p)
	dropClaims(keys)
	p.live.Wait()
}

// AtRoute names route in a routing refusal that does not name one yet.
func AtRoute(err error, route string) error {
	var e *tenancy.Error
	if errors.As(err, &e) && e.Route == "" &&
		(e.Code == tenancy.CodeDedicatedTargetShared || e.Code == tenancy.CodeConnectionBudgetExhausted) {
		e.Route = route
	}
	return err
}
