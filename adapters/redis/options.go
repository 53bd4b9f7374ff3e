package redis

import (
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Option configures a Redis module.
type Option = modules.Option

// takes is which of the kit's options a Redis module honours.
var takes = modules.Takes{Teardown: true, ConnBudget: true, FromGraph: true, Placements: true}

// nsFunc names a tenant's key namespace: naming.PerTenant(prefix) is the
// prefix followed by the tenant's 32 hex digits, injective by
// construction; a naming.Func must be injective itself (two tenants never
// share a namespace) and stable. Returned names are validated like route
// names; an error fails the call closed.
type nsFunc func(tenancy.ID) (string, error)

// namespaceOf is n's resolver; nil when n names no namespace.
func namespaceOf(n naming.Name) nsFunc {
	switch {
	case n.Func() != nil:
		return n.Func()
	case n.PerTenant():
		return tenantNamespace(n.Base())
	}
	return nil
}

type config struct {
	modules.Settings
	client  goredis.UniversalClient
	connect *goredis.UniversalOptions
	// sources counts Use, Connect, Routed and modules.FromGraph.
	sources int
	routed  *routedConfig
	routes  []*routeSpec
	workers []workerSpec
	// placed: set on the module of one placement; errs: the module's
	// refusals (a placement's: the placed module's, for the first).
	placed *modules.Placement
	errs   []error
}

type routeSpec struct {
	name        string
	kind        floors.Kind
	tenantAware bool
	namespace   nsFunc
	// sharedNS: the config named a shared namespace, which redis refuses.
	sharedNS bool
	global   bool
	ttl      time.Duration // idempotency results
	// fleet heartbeats
	replica   string
	beatEvery time.Duration
	beatTTL   time.Duration
	// as is the name the route object is provided under: the route's, or
	// on a placement's module the placed module's private name.
	as string
}

// Use runs the module on c, a client the caller owns and closes. Any
// go-redis UniversalClient works: *Client, *ClusterClient, a failover
// client; give a *ClusterClient a ClusterStateReloadInterval of a few
// seconds, or calls for a dead master's slots fail for up to a minute
// after its replica took over.
func Use(c goredis.UniversalClient) Option {
	return modules.Own(func(cfg *config) { cfg.client, cfg.sources = c, cfg.sources+1 })
}

// Connect makes the module build its own client from opts (lazily: go-redis
// dials on the first command) and close it on stop. A cluster client built
// here re-reads the slot map every 2 seconds, so a failed-over master's
// slots recover within seconds (go-redis's default is a minute).
func Connect(opts *goredis.UniversalOptions) Option {
	return modules.Own(func(cfg *config) { cfg.connect, cfg.sources = opts, cfg.sources+1 })
}

// RouteConfig declares a cache, counter, idempotency, lock, pub/sub or
// stream route. The zero value is a shared route (tier none), refused by
// any floor above none.
type RouteConfig struct {
	// TenantAware puts the bound tenant in every key and channel of the
	// route (tagged); calls without a tenant fail closed.
	TenantAware bool
	// Namespace names the route's keys per tenant (namespace):
	// naming.PerTenant(prefix), or a naming.Func that is injective, returns
	// 1 to 128 of [A-Za-z0-9_.-] (anything else fails the call closed) and
	// is stable (a route caches the namespaces of tenants in use). A shared
	// name is refused: keys are shared already. Streams and pub/sub have
	// no key namespace and refuse it.
	Namespace naming.Name
	// TenantGlobal marks a lock or pub/sub route deployment-wide (a leader
	// lock, an outbox wake): it runs with no tenant, under
	// tenancy.WithGlobal(ctx), and must not be tenant-scoped.
	TenantGlobal bool
	// TTL is how long an idempotency route replays a stored result
	// (default 24h, as PostgreSQL's); other kinds refuse it.
	TTL time.Duration
}

// FleetConfig declares a fleet route. Fleet routes are always
// tenant-global, so it has no tenant fields. The zero value declares a
// fleet without automatic heartbeats: replicas beat with Fleet.Heartbeat.
type FleetConfig struct {
	// HeartbeatInterval makes the module beat for this replica every
	// interval from OnStart and leave the fleet on OnStop; zero: no
	// automatic heartbeat.
	HeartbeatInterval time.Duration
	// TTL is how long each automatic beat keeps the replica live: longer
	// than HeartbeatInterval (3×HeartbeatInterval is usual), or replicas
	// flicker out of the fleet.
	TTL time.Duration
	// Replica names this replica in the fleet; empty: the host name, the
	// process id and a random suffix.
	Replica string
}

// tenantNamespace is naming.PerTenant's resolver: prefix followed by the
// tenant's 32 hex digits, injective by construction.
func tenantNamespace(prefix string) nsFunc {
	return func(id tenancy.ID) (string, error) {
		var b strings.Builder
		b.Grow(len(prefix) + 32)
		b.WriteString(prefix)
		for _, c := range id.Bytes() {
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		}
		return b.String(), nil
	}
}

func addRoute(name string, kind floors.Kind, rc RouteConfig) Option {
	return modules.Own(func(cfg *config) {
		rc := cfg.inShared(rc)
		cfg.routes = append(cfg.routes, &routeSpec{
			name: name, kind: kind, tenantAware: rc.TenantAware, namespace: namespaceOf(rc.Namespace), sharedNS: !rc.Namespace.IsZero() && !rc.Namespace.PerTenant(), global: rc.TenantGlobal, ttl: rc.TTL,
			as: modules.PlacedName(cfg.placed, name),
		})
	})
}

// CacheRoute adds a cache route; the *Cache is provided as name:"<name>".
func CacheRoute(name string, rc RouteConfig) Option { return addRoute(name, kindCache, rc) }

// CounterRoute adds a counter route, provided as *Counter name:"<name>".
func CounterRoute(name string, rc RouteConfig) Option { return addRoute(name, kindCounter, rc) }

// IdempotencyRoute adds an idempotency route, provided as *Idempotency.
func IdempotencyRoute(name string, rc RouteConfig) Option {
	return addRoute(name, kindIdempotency, rc)
}

// LockRoute adds a lock route, provided as *Locks name:"<name>".
func LockRoute(name string, rc RouteConfig) Option { return addRoute(name, kindLock, rc) }

// PubSubRoute adds a pub/sub route, provided as *PubSub name:"<name>".
func PubSubRoute(name string, rc RouteConfig) Option { return addRoute(name, kindPubSub, rc) }

// StreamRoute adds a stream route, provided as *Stream name:"<name>".
func StreamRoute(name string, rc RouteConfig) Option { return addRoute(name, kindStream, rc) }

// FleetRoute adds a fleet route, provided as *Fleet name:"<name>". It is
// always tenant-global.
func FleetRoute(name string, fc FleetConfig) Option {
	return modules.Own(func(cfg *config) {
		cfg.routes = append(cfg.routes, &routeSpec{
			name: name, kind: kindFleet, replica: fc.Replica, beatEvery: fc.HeartbeatInterval, beatTTL: fc.TTL, as: name,
		})
	})
}
