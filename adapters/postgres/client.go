package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// RoutedConfig bounds a routed client (MaxConnsPerClient defaults to 4
// connections per tenant's pool) and says how each pool is built.
type RoutedConfig struct {
	routing.Limits
	// Configure adjusts each tenant's pool configuration (tracer, TLS,
	// dialer, timeouts) before it is built. It must not change where the
	// pool connects (hosts, port, database): that is the tenant's claimed
	// target. MaxConns is set after it.
	Configure func(*pgxpool.Config)
}

// Client is a module's connection: one pool, or one pool per credential
// set when routed. Nothing connects before the first statement. Its
// lifecycle (Provision, MigrateAll, Teardown...) is the module's
// *migrate.Runner, also provided as name:"<module>".
type Client struct {
	*migrate.Runner
	module   string
	prefix   string
	static   string // schema of static tables
	teardown bool
	pooled   bool // behind a transaction pooler
	routes   []*routeSpec
	life     *lifecycle
	// rowRole is the role guarded calls run as (RowSecurity); "" without.
	rowRole string
	// rowChecked: the server said the module's user is past the policies.
	rowChecked atomic.Bool
	// tenants refuses a suspended tenant's calls (nil: no lifecycle).
	suspensions *modules.Suspensions
	// tel records route calls; nil when the app gave no telemetry, and
	// then tels is nil too.
	tel  *telemetry.Telemetry
	tels map[*routeSpec]*telemetry.Route
	// entries admits every route's calls (the kit's steps), by route.
	entries map[*routeSpec]*modules.Entry[reached]
	// unitEntry admits every unit of work (InTx).
	unitEntry *modules.Entry[pgx.Tx]
	// units records InTx as a span; nil without a tracer.
	units *telemetry.Unit

	mu      sync.Mutex
	cfg     *pgxpool.Config // plain, owned: opened on first use
	pool    *pgxpool.Pool
	ownPool bool
	// served recycles the own pool's connections after RecycleAfter tenants (nil: never).
	served *tenantsServed
	ready  atomic.Pointer[pgxpool.Pool] // c.pool once set: the lock-free fast path

	routed *routing.Pools[*pgxpool.Pool]
	stmts  stmtCache
	// closers close the pools routes open beside the module's (dynamic
	// reads), on stop.
	closers []func()
	// logins are the per-tenant login pools of dynamic reads, evicted on
	// Teardown.
	logins []*routing.Pools[*pgxpool.Pool]
	// sqlLogins are a SQL route's tenant login pools: a unit of work then
	// runs on the tenant's login, so the route's text joins it confined.
	sqlLogins atomic.Pointer[routing.Pools[*pgxpool.Pool]]
}

// dynamicPool returns a pool for a dynamic read on a plain client: the
// module's connection settings, maxConns connections, nothing cached per
// connection (DISCARD ALL drops prepared statements) and read-only by
// default. It is nil on a routed client, whose reads run on the tenant's
// pool. Behind a transaction pooler the read-only default is left out: a
// pooler refuses startup parameters it does not know (PgBouncer does), and
// would not keep one to the session anyway; BEGIN READ ONLY is the fence.
// Its mode, describe_exec, is safe there because a read runs its text
// inside its transaction, whose server session the pooler keeps.
func (c *Client) dynamicPool(maxConns int32) *tenantPool {
	if c.routed != nil {
		return nil
	}
	var cfg *pgxpool.Config
	switch {
	case c.cfg != nil:
		cfg = c.cfg.Copy()
	case c.pool != nil:
		cfg = c.pool.Config()
	}
	if cfg != nil {
		cfg.MaxConns, cfg.MinConns = maxConns, 0
		cc := cfg.ConnConfig
		cc.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
		cc.StatementCacheCapacity, cc.DescriptionCacheCapacity = 0, 0
		if !c.pooled {
			if cc.RuntimeParams == nil {
				cc.RuntimeParams = map[string]string{}
			}
			cc.RuntimeParams["default_transaction_read_only"] = "on"
		}
	}
	l := newTenantPool(cfg, int(maxConns))
	c.mu.Lock()
	c.closers = append(c.closers, l.close)
	c.mu.Unlock()
	return l
}

var noRelease = func() {}

// errNoConnection: the module was built with neither a DSN, a pool nor a
// routed resolver; Module refuses that at wiring, so this is defensive.
var errNoConnection = errors.New("postgres: module has no connection configured")

// conn returns the pool serving tenant (the zero ID only on an unscoped
// route of a plain client) and its release function.
func (c *Client) conn(ctx context.Context, tenant tenancy.ID) (*pgxpool.Pool, func(), error) {
	if c.routed != nil {
		if tenant.IsZero() {
			return nil, nil, rules.Unbound(c.module, "")
		}
		return c.routed.AcquireFor(ctx, tenant)
	}
	if p := c.ready.Load(); p != nil {
		return p, noRelease, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pool == nil {
		if c.cfg == nil {
			return nil, nil, errNoConnection
		}
		p, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), c.cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("postgres: module %s: %w", c.module, err)
		}
		c.pool = p
	}
	c.ready.Store(c.pool)
	return c.pool, noRelease, nil
}

// Pool returns the pool for the tenant bound to ctx with its release
// function: the escape hatch for statements the routes do not cover. What
// runs on it is outside the module's checks.
func (c *Client) Pool(ctx context.Context) (*pgxpool.Pool, func(), error) {
	var tenant tenancy.ID
	if c.routed != nil {
		var ok bool
		if tenant, ok = tenancy.FromContext(ctx); !ok {
			return nil, nil, rules.Unbound(c.module, "")
		}
	}
	return c.conn(ctx, tenant)
}

// SchemaPrefix is the prefix of this module's tenant schemas.
func (c *Client) SchemaPrefix() string { return c.prefix }

func (c *Client) close() {
	if c.routed != nil {
		c.routed.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.closers {
		f()
	}
	if c.pool != nil && c.ownPool {
		c.pool.Close()
	}
	c.pool = nil
	c.ready.Store(nil)
}

// stmtCache holds statements built per (tenant, route), bounded: two
// generations of at most stmtGeneration sets each. A hit in the older one
// moves the set to the newer; when the newer fills up, the older is
// dropped. Tenants in use stay cached, idle ones age out, and the heap
// does not grow with the tenant count (rebuilding a set is cheap and
// exact).
//
// Statements built per tenant differ in text (the schema is in it), so
// preparing each of them would fill pgx's per-connection statement cache
// (512 by default) once tenants × statements outgrow it: every call would
// then pay a deallocation and a prepare round trip, and each connection
// would hold statements for every tenant it served. Only the first
// preparedSets (tenant, route) pairs built run as prepared statements, for
// good; every other set runs unprepared (sql.mode: one round trip, nothing
// held on the server, nothing cached per statement text in the client).
type stmtCache struct {
	mu       sync.RWMutex
	cur, old map[stmtKey]any
	prepared map[stmtKey]struct{}
}

type stmtKey struct {
	tenant tenancy.ID
	route  string
}

const (
	stmtGeneration = 1024
	// preparedSets × the statements of a route stays well under pgx's
	// default statement cache, leaving room for the static statements.
	preparedSets = 32
)

// unpreparer is a statement set that can be told to run unprepared.
type unpreparer interface {
	setUnprepared()
	isUnprepared() bool
}

func (s *stmtCache) get(k stmtKey) (any, bool) {
	s.mu.RLock()
	v, ok := s.cur[k]
	if !ok {
		if v, ok = s.old[k]; ok {
			s.mu.RUnlock()
			s.put(k, v) // in use again: into the newer generation
			return v, true
		}
	}
	s.mu.RUnlock()
	return v, ok
}

// put stores v, first marking it unprepared unless k is one of the
// prepared pairs; v is not shared before it is first stored, and a set
// moved between generations keeps its mode (k's membership never changes).
func (s *stmtCache) put(k stmtKey, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil || len(s.cur) >= stmtGeneration {
		s.old, s.cur = s.cur, make(map[stmtKey]any)
		if s.prepared == nil {
			s.prepared = make(map[stmtKey]struct{})
		}
	}
	if u, ok := v.(unpreparer); ok {
		_, prepared := s.prepared[k]
		if !prepared && len(s.prepared) < preparedSets {
			s.prepared[k], prepared = struct{}{}, true
		}
		if !prepared && !u.isUnprepared() {
			u.setUnprepared()
		}
	}
	s.cur[k] = v
	delete(s.old, k)
}

// reserve reports whether k is one of the prepared pairs, making it one
// while the budget lasts.
func (s *stmtCache) reserve(k stmtKey) bool {
	s.mu.RLock()
	_, ok := s.prepared[k]
	full := len(s.prepared) >= preparedSets
	s.mu.RUnlock()
	if ok || full {
		return ok
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prepared == nil {
		s.prepared = make(map[stmtKey]struct{})
	}
	if _, ok := s.prepared[k]; ok || len(s.prepared) < preparedSets {
		s.prepared[k] = struct{}{}
		return true
	}
	return false
}

// len is how many sets are held.
func (s *stmtCache) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.cur) + len(s.old)
}

// Evict forgets a routed tenant's pool binding, so its next call resolves
// its credentials again (after a rotation or a revocation); the pool is
// closed once no other tenant uses it and its statements are done. It does
// nothing on a plain client.
func (c *Client) Evict(tenant tenancy.ID) {
	if c.routed != nil {
		c.routed.Evict(tenant)
	}
}

// ping asks the server on the module's own pool whether it answers: the
// module's readiness (modules.ProvideServerCheck passes a routed client,
// which has no pool of its own; the migration version is
// modules.AddVersions' check).
func (c *Client) ping(ctx context.Context) error {
	pool, release, err := c.conn(ctx, tenancy.ID{})
	if err != nil {
		return err
	}
	defer release()
	return pool.Ping(ctx)
}
