package redis

import (
	"context"
	"fmt"
	"reflect"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// floorsRoute is the route's wiring as enforcement sees it.
func (r *routeSpec) floorsRoute(routed bool) floors.Route {
	role := "keys"
	switch r.kind {
	case kindStream:
		role = "stream"
	case kindPubSub:
		role = "channels"
	}
	return floors.Route{
		Name: r.name, Kind: r.kind, TenantAware: r.tenantAware, Routed: routed,
		Relations:    []floors.Relation{{Role: role, Name: r.name, PerTenant: r.namespace != nil}},
		Fleet:        r.kind == kindFleet,
		TenantGlobal: r.global,
	}
}

// validate reports wiring the floor rules cannot express.
func (r *routeSpec) validate() []tenancy.Problem {
	var bad []tenancy.Problem
	add := func(detail, fix string) { bad = append(bad, tenancy.Problem{Detail: detail, Fix: fix}) }
	if err := validName("route name", r.name); err != nil {
		add(err.Error(), "rename the route: 1 to 128 letters, digits, '_', '.' or '-'")
	}
	if r.global && r.kind != kindLock && r.kind != kindPubSub {
		add("TenantGlobal applies to lock and pub/sub routes (fleet routes are always tenant-global)",
			"set redis.RouteConfig.TenantGlobal to false on this "+string(r.kind)+" route")
	}
	if r.ttl < 0 || r.ttl > 0 && r.kind != kindIdempotency {
		add(fmt.Sprintf("TTL %s: a positive TTL applies to idempotency routes only", r.ttl),
			"leave redis.RouteConfig.TTL zero on this "+string(r.kind)+" route, or set a positive TTL on an idempotency route")
	}
	if r.sharedNS {
		add("a shared Namespace: a route's keys are shared unless named per tenant",
			"set redis.RouteConfig.Namespace to naming.PerTenant(prefix), or leave it zero")
	}
	// A kind the rules never lift to namespace has no key namespace: a
	// resolver there would promise a cut that does not exist.
	if r.namespace != nil && rules.Kinds[r.kind].NeverNamespace {
		add(fmt.Sprintf("%s routes have no per-tenant key namespace", r.kind),
			"leave redis.RouteConfig.Namespace nil on this route; set RouteConfig.TenantAware (tagged) or use a routed client (dedicated)")
	}
	switch {
	case r.beatEvery < 0 || r.beatTTL < 0:
		add("a heartbeat's interval and TTL cannot be negative",
			fmt.Sprintf("set redis.FleetConfig.HeartbeatInterval and TTL to zero or more (now HeartbeatInterval=%s, TTL=%s)", r.beatEvery, r.beatTTL))
	case r.beatEvery > 0 && r.beatTTL <= r.beatEvery:
		add("a heartbeat's TTL must be longer than its interval, or replicas flicker out of the fleet",
			fmt.Sprintf("set redis.FleetConfig.TTL above HeartbeatInterval (now HeartbeatInterval=%s, TTL=%s); 3×HeartbeatInterval is usual", r.beatEvery, r.beatTTL))
	case r.beatEvery == 0 && r.beatTTL > 0:
		// A TTL with no interval would promise beats that never happen.
		add("a heartbeat TTL without an interval: the module would never beat",
			"set redis.FleetConfig.HeartbeatInterval (below TTL), or drop TTL and call Fleet.Heartbeat yourself")
	}
	return bad
}

// Module builds a Redis module: its wiring, checked during fx.New, and its
// routes, each provided under its route name.
func Module(name string, opts ...Option) fx.Option {
	cfg := &config{}
	errs := modules.Configure(rules, name, cfg, takes, opts)
	if cfg.FromGraph {
		cfg.sources++
	}
	if cfg.Offer != nil {
		return placedModule(name, opts, cfg, errs)
	}
	cfg.errs = append(cfg.errs, errs...)
	return module(name, cfg)
}

// module is Module for the options applied to cfg.
func module(name string, cfg *config) fx.Option {
	spec := modules.Spec{Name: name, Rules: rules, Floor: cfg.Floor, ConnBudget: cfg.ConnBudget,
		Sources: cfg.sources, SourceFix: "pass exactly one of redis.Use(c), redis.Connect(opts), redis.Routed(resolve, cfg) and modules.FromGraph()",
		Problems: cfg.errs}
	if cfg.placed != nil {
		spec.Placement = cfg.placed.At
	}
	if cfg.routed != nil {
		cfg.routed.module, cfg.routed.budgeted = name, cfg.ConnBudget > 0
		spec.Problems = append(spec.Problems, cfg.routed.validate(name)...) // before the defaults fill the limits
		// go-redis's default pool follows GOMAXPROCS, which the runtime
		// may raise later: fix it here, where the budget counts it.
		cfg.routed.Limits = cfg.routed.limits()
		spec.WorstCaseConns = cfg.routed.MaxClients * cfg.routed.MaxConnsPerClient * cfg.routed.nodesPerClient()
	}
	for _, r := range cfg.routes {
		rs := modules.RouteSpec{Route: r.floorsRoute(cfg.routed != nil), Problems: r.validate(),
			Provide: provideRoute(r), Provided: []modules.Provided{{Type: routeTypes[r.kind], Name: r.as}}}
		spec.Problems = append(spec.Problems, cfg.checkPlaced(name, r)...)
		if r.kind == kindFleet && r.beatEvery > 0 {
			rs.Provide = fx.Options(rs.Provide, fleetHeartbeat(name, r))
		}
		spec.Routes = append(spec.Routes, rs)
	}
	for _, w := range cfg.workers {
		ws := modules.WorkerSpec{Worker: w.decl(name), Problems: w.bad, Run: w.invoke(name)}
		if r := cfg.route(w.route); r == nil || r.kind != kindStream {
			ws.Problems = append(ws.Problems, tenancy.Problem{Detail: fmt.Sprintf("worker %q needs a stream route of this module", w.name),
				Fix: "add StreamRoute with that name to the module"})
		}
		spec.Workers = append(spec.Workers, ws)
	}
	spec.Parts = []fx.Option{fx.Provide(fx.Private, newCore(name, cfg)),
		modules.ProvideServerCheck(name, rules.Name, func(c *core) bool { return c.client == nil },
			func(ctx context.Context, c *core) error { return c.client.Ping(ctx).Err() }),
		modules.ProvideTenantState(func(c *core) modules.TenantState {
			o := &offboarder{core: c, routes: cfg.routes, teardown: cfg.Teardown, ownOnly: cfg.placed != nil}
			return modules.TenantState{Module: name, Backend: rules.Name, Offboard: o.Offboard, OffboardMany: o.OffboardMany, Verify: o.Verify,
				Export: o.Export, Import: o.Import, Placement: cfg.placed}
		})}
	return modules.Assemble(spec)
}

// routeTypes is the type provideRoute provides for each kind, which a
// refused module provides in its place.
var routeTypes = map[floors.Kind]reflect.Type{
	kindCache:       reflect.TypeFor[*Cache](),
	kindCounter:     reflect.TypeFor[*Counter](),
	kindIdempotency: reflect.TypeFor[*Idempotency](),
	kindLock:        reflect.TypeFor[*Locks](),
	kindPubSub:      reflect.TypeFor[*PubSub](),
	kindStream:      reflect.TypeFor[*Stream](),
	kindFleet:       reflect.TypeFor[*Fleet](),
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
	// tenants refuses a suspended tenant's calls (nil: no lifecycle).
	suspensions *modules.Suspensions
	// tel records calls (nil: the app gave no telemetry).
	tel *telemetry.Telemetry
	// forgetters drop a tenant's in-process state on offboarding.
	forgetters forgetters
}

type clientIn struct {
	fx.In
	Lifecycle fx.Lifecycle
	Client    goredis.UniversalClient `optional:"true"`
	modules.LifecycleIn
}

func newCore(module string, cfg *config) func(clientIn) (*core, error) {
	return func(in clientIn) (*core, error) {
		c := &core{module: module, suspensions: in.Suspensions, tel: in.Telemetry}
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
			c.client = newClient(cfg.connect)
			in.Lifecycle.Append(fx.StopHook(c.client.Close))
		case in.Client != nil:
			c.client = in.Client
		default:
			return nil, rules.WiringInvalid(module, "", "modules.FromGraph is set and nothing in the app provides a goredis.UniversalClient",
				"provide a goredis.UniversalClient in the app, or pass redis.Use(c) or redis.Connect(opts) instead of FromGraph")
		}
		return c, nil
	}
}
