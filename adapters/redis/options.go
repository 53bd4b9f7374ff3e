package redis

import (
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Option configures a Redis module.
type Option func(*config)

// RouteOption configures one route.
type RouteOption func(*routeSpec)

// NamespaceFunc names a tenant's key namespace. It must be injective (two
// tenants never share a namespace) and return 1 to 128 of [A-Za-z0-9_.-];
// anything else fails the call closed.
type NamespaceFunc func(tenancy.ID) (string, error)

type config struct {
	client  goredis.UniversalClient
	connect *goredis.UniversalOptions
	floor   tenancy.Tier
	routed  *routedConfig
	budget  int
	routes  []*routeSpec
	workers []workerSpec
}

type routeSpec struct {
	name        string
	kind        floors.Kind
	tenantAware bool
	namespace   NamespaceFunc
	global      bool
	// fleet heartbeats
	replica    string
	beatEvery  time.Duration
	beatTTL    time.Duration
	badOptions []problem
}

// Client runs the module on c, a client the caller owns and closes. Any
// go-redis UniversalClient works: *Client, *ClusterClient, a failover
// client; give a *ClusterClient a ClusterStateReloadInterval of a few
// seconds, or calls for a dead master's slots fail for up to a minute
// after its replica took over. Without Client or Connect, the module takes a
// goredis.UniversalClient from the fx graph.
func Client(c goredis.UniversalClient) Option { return func(cfg *config) { cfg.client = c } }

// Connect makes the module build its own client from opts (lazily: go-redis
// dials on the first command) and close it on stop. A cluster client built
// here re-reads the slot map every 2 seconds, so a failed-over master's
// slots recover within seconds (go-redis's default is a minute).
func Connect(opts *goredis.UniversalOptions) Option {
	return func(cfg *config) { cfg.connect = opts }
}

// RequiredIsolation declares the floor every route must reach.
func RequiredIsolation(t tenancy.Tier) Option { return func(cfg *config) { cfg.floor = t } }

// TenantAware puts the bound tenant in every key of the route (tagged).
func TenantAware() RouteOption { return func(r *routeSpec) { r.tenantAware = true } }

// PerTenantNamespace names the route's keys per tenant with fn (namespace).
// Streams and pub/sub have no namespace and refuse it.
func PerTenantNamespace(fn NamespaceFunc) RouteOption {
	return func(r *routeSpec) { r.namespace = fn }
}

// TenantNamespace is the usual resolver: prefix followed by the tenant's 32
// hex digits, injective by construction.
func TenantNamespace(prefix string) NamespaceFunc {
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

// TenantGlobal marks a lock or pub/sub route deployment-wide (a leader
// lock, an outbox wake): it runs with no tenant and must not be
// tenant-scoped. Use it under tenancy.WithGlobal(ctx).
func TenantGlobal() RouteOption { return func(r *routeSpec) { r.global = true } }

// Heartbeat makes a fleet route beat for this replica every interval from
// OnStart, each beat live for ttl, and leave the fleet on OnStop.
func Heartbeat(every, ttl time.Duration) RouteOption {
	return func(r *routeSpec) {
		if r.kind != KindFleet {
			r.badOptions = append(r.badOptions, problem{"Heartbeat applies to fleet routes only",
				"drop redis.Heartbeat from this " + string(r.kind) + " route, or declare the route with redis.FleetRoute"})
		}
		r.beatEvery, r.beatTTL = every, ttl
	}
}

// Replica names this replica in a fleet route; the default is the host
// name, the process id and a random suffix.
func Replica(id string) RouteOption { return func(r *routeSpec) { r.replica = id } }

func addRoute(name string, kind floors.Kind, opts []RouteOption) Option {
	return func(cfg *config) {
		r := &routeSpec{name: name, kind: kind}
		for _, o := range opts {
			o(r)
		}
		cfg.routes = append(cfg.routes, r)
	}
}

// CacheRoute adds a cache route; the *Cache is provided as name:"<name>".
func CacheRoute(name string, opts ...RouteOption) Option { return addRoute(name, KindCache, opts) }

// CounterRoute adds a counter route, provided as *Counter name:"<name>".
func CounterRoute(name string, opts ...RouteOption) Option {
	return addRoute(name, KindCounter, opts)
}

// IdempotencyRoute adds an idempotency route, provided as *Idempotency.
func IdempotencyRoute(name string, opts ...RouteOption) Option {
	return addRoute(name, KindIdempotency, opts)
}

// LockRoute adds a lock route, provided as *Locks name:"<name>".
func LockRoute(name string, opts ...RouteOption) Option { return addRoute(name, KindLock, opts) }

// PubSubRoute adds a pub/sub route, provided as *PubSub name:"<name>".
func PubSubRoute(name string, opts ...RouteOption) Option {
	return addRoute(name, KindPubSub, opts)
}

// StreamRoute adds a stream route, provided as *Stream name:"<name>".
func StreamRoute(name string, opts ...RouteOption) Option {
	return addRoute(name, KindStream, opts)
}

// FleetRoute adds a fleet route, provided as *Fleet name:"<name>". It is
// always tenant-global.
func FleetRoute(name string, opts ...RouteOption) Option { return addRoute(name, KindFleet, opts) }
