package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
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
	badOptions []string
}

// Client runs the module on c, a client the caller owns and closes. Any
// go-redis UniversalClient works: *Client, *ClusterClient, a failover
// client. Without Client or Connect, the module takes a
// goredis.UniversalClient from the fx graph.
func Client(c goredis.UniversalClient) Option { return func(cfg *config) { cfg.client = c } }

// Connect makes the module build its own client from opts (lazily: go-redis
// dials on the first command) and close it on stop.
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
			r.badOptions = append(r.badOptions, "Heartbeat applies to fleet routes only")
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

// floorsRoute is the route's wiring as enforcement sees it.
func (r *routeSpec) floorsRoute(routed bool) floors.Route {
	role := "keys"
	switch r.kind {
	case KindStream:
		role = "stream"
	case KindPubSub:
		role = "channels"
	}
	return floors.Route{
		Name: r.name, Kind: r.kind, TenantAware: r.tenantAware, Routed: routed,
		Relations:    []floors.Relation{{Role: role, Name: r.name, PerTenant: r.namespace != nil}},
		Fleet:        r.kind == KindFleet,
		TenantGlobal: r.global,
	}
}

// validate reports wiring the floor rules cannot express.
func (r *routeSpec) validate() []string {
	var bad []string
	if err := validName("route name", r.name); err != nil {
		bad = append(bad, err.Error())
	}
	if r.global && r.kind != KindLock && r.kind != KindPubSub {
		bad = append(bad, "TenantGlobal applies to lock and pub/sub routes (fleet routes are always tenant-global)")
	}
	if r.namespace != nil && (r.kind == KindStream || r.kind == KindPubSub) {
		bad = append(bad, fmt.Sprintf("%s routes have no per-tenant key namespace (DESIGN §2)", r.kind))
	}
	if r.beatEvery > 0 && r.beatTTL <= r.beatEvery {
		bad = append(bad, "a heartbeat's TTL must be longer than its interval, or replicas flicker out of the fleet")
	}
	if r.replica != "" && r.kind != KindFleet {
		bad = append(bad, "Replica applies to fleet routes only")
	}
	return append(bad, r.badOptions...)
}

func wiringError(module, route, detail, fix string) error {
	return &tenancy.Error{Code: tenancy.CodeWiringInvalid, Module: module, Backend: Rules.Name,
		Route: route, Detail: detail, Fix: fix}
}

// Module builds a Redis module: its wiring, checked during fx.New, and its
// routes, each provided under its route name.
func Module(name string, opts ...Option) fx.Option {
	cfg := &config{}
	for _, o := range opts {
		o(cfg)
	}
	mod := floors.Module{Name: name, Backend: Rules, Floor: cfg.floor, ConnBudget: cfg.budget}
	if cfg.routed != nil {
		mod.WorstCaseConns = cfg.routed.maxPools() * cfg.routed.poolSize()
	}
	var errs []error
	seen := map[string]bool{}
	for _, r := range cfg.routes {
		mod.Routes = append(mod.Routes, r.floorsRoute(cfg.routed != nil))
		for _, msg := range r.validate() {
			errs = append(errs, wiringError(name, r.name, msg, "fix the route's options"))
		}
		if seen[r.name] {
			errs = append(errs, wiringError(name, r.name, "two routes share the name",
				"give every route of a module its own name: the name is its key space"))
		}
		seen[r.name] = true
	}
	parts := []fx.Option{modules.Provide(mod)}
	if cfg.routed != nil {
		errs = append(errs, cfg.routed.validate(name)...)
	}
	for _, w := range cfg.workers {
		for _, msg := range w.bad {
			errs = append(errs, wiringError(name, w.route, msg, "complete the worker's config"))
		}
		spec := cfg.route(w.route)
		if spec == nil || spec.kind != KindStream {
			errs = append(errs, wiringError(name, w.route, fmt.Sprintf("worker %q needs a stream route of this module", w.name),
				"add StreamRoute with that name to the module"))
			continue
		}
		parts = append(parts, modules.Worker(w.decl(name)), w.invoke())
	}
	if len(errs) > 0 {
		return fx.Module(name, fx.Error(errors.Join(errs...)))
	}
	parts = append(parts, fx.Provide(fx.Private, newCore(name, cfg)))
	for _, r := range cfg.routes {
		parts = append(parts, provideRoute(r))
		if r.kind == KindFleet && r.beatEvery > 0 {
			parts = append(parts, fleetHeartbeat(r))
		}
	}
	return fx.Module(name, parts...)
}

func (cfg *config) route(name string) *routeSpec {
	for _, r := range cfg.routes {
		if r.name == name {
			return r
		}
	}
	return nil
}

func nameTag(route string) string { return `name:"` + route + `"` }

// core is a module's connection state, private to the module.
type core struct {
	module string
	client goredis.UniversalClient
	routes *router
}

type clientIn struct {
	fx.In
	Lifecycle fx.Lifecycle
	Client    goredis.UniversalClient `optional:"true"`
}

func newCore(module string, cfg *config) func(clientIn) (*core, error) {
	return func(in clientIn) (*core, error) {
		c := &core{module: module}
		if cfg.routed != nil {
			r, err := newRouter(module, cfg.routed)
			if err != nil {
				return nil, err
			}
			c.routes = r
			in.Lifecycle.Append(fx.StopHook(func(ctx context.Context) error { return r.close(ctx) }))
			return c, nil
		}
		switch {
		case cfg.client != nil:
			c.client = cfg.client
		case cfg.connect != nil:
			c.client = goredis.NewUniversalClient(cfg.connect)
			in.Lifecycle.Append(fx.StopHook(c.client.Close))
		case in.Client != nil:
			c.client = in.Client
		default:
			return nil, wiringError(module, "", "the module has no Redis client",
				"pass redis.Client(c) or redis.Connect(opts), or provide a goredis.UniversalClient in the graph")
		}
		return c, nil
	}
}
