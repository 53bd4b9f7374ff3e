package redis

import (
	"context"
	"fmt"
	"reflect"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
)

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

// problem is wiring the floor rules cannot express: what is wrong and
// exactly what to change.
type problem struct{ msg, fix string }

// validate reports wiring the floor rules cannot express.
func (r *routeSpec) validate() []problem {
	var bad []problem
	if err := validName("route name", r.name); err != nil {
		bad = append(bad, problem{err.Error(), "rename the route: 1 to 128 letters, digits, '_', '.' or '-'"})
	}
	if r.global && r.kind != KindLock && r.kind != KindPubSub {
		bad = append(bad, problem{"TenantGlobal applies to lock and pub/sub routes (fleet routes are always tenant-global)",
			"set redis.RouteConfig.TenantGlobal to false on this " + string(r.kind) + " route"})
	}
	// A kind the rules never lift to namespace has no key namespace: a
	// resolver there would promise a cut that does not exist.
	if r.namespace != nil && Rules.Kinds[r.kind].NeverNamespace {
		bad = append(bad, problem{fmt.Sprintf("%s routes have no per-tenant key namespace", r.kind),
			"leave redis.RouteConfig.Namespace nil on this route; set RouteConfig.TenantAware (tagged) or use a routed client (dedicated)"})
	}
	if r.beatEvery < 0 || r.beatTTL < 0 {
		bad = append(bad, problem{"a heartbeat's interval and TTL cannot be negative",
			fmt.Sprintf("set redis.FleetConfig.HeartbeatInterval and TTL to zero or more (now HeartbeatInterval=%s, TTL=%s)", r.beatEvery, r.beatTTL)})
	} else if r.beatEvery > 0 && r.beatTTL <= r.beatEvery {
		bad = append(bad, problem{"a heartbeat's TTL must be longer than its interval, or replicas flicker out of the fleet",
			fmt.Sprintf("set redis.FleetConfig.TTL above HeartbeatInterval (now HeartbeatInterval=%s, TTL=%s); 3×HeartbeatInterval is usual", r.beatEvery, r.beatTTL)})
	} else if r.beatEvery == 0 && r.beatTTL > 0 {
		// A TTL with no interval would promise beats that never happen.
		bad = append(bad, problem{"a heartbeat TTL without an interval: the module would never beat",
			"set redis.FleetConfig.HeartbeatInterval (below TTL), or drop TTL and call Fleet.Heartbeat yourself"})
	}
	return bad
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
		mod.WorstCaseConns = cfg.routed.maxClients() * cfg.routed.maxConnsPerClient()
	}
	var errs []error
	seen := map[string]bool{}
	for _, r := range cfg.routes {
		mod.Routes = append(mod.Routes, r.floorsRoute(cfg.routed != nil))
		for _, p := range r.validate() {
			errs = append(errs, Rules.WiringInvalid(name, r.name, p.msg, p.fix))
		}
		if seen[r.name] {
			errs = append(errs, Rules.WiringInvalid(name, r.name, "two routes share the name",
				"give every route of a module its own name: the name is its key space"))
		}
		seen[r.name] = true
	}
	var decls, invokes []fx.Option
	if cfg.routed != nil {
		errs = append(errs, cfg.routed.validate(name)...)
	}
	for _, w := range cfg.workers {
		for _, p := range w.bad {
			errs = append(errs, Rules.WiringInvalid(name, w.route, p.msg, p.fix))
		}
		spec := cfg.route(w.route)
		if spec == nil || spec.kind != KindStream {
			errs = append(errs, Rules.WiringInvalid(name, w.route, fmt.Sprintf("worker %q needs a stream route of this module", w.name),
				"add StreamRoute with that name to the module"))
			continue
		}
		decls = append(decls, modules.Worker(w.decl(name)))
		invokes = append(invokes, w.invoke(name))
	}
	if len(errs) > 0 {
		// Reported by the app's check with every other module's violations
		// (its workers' included); nothing of the module is built, and
		// each route it would have provided fails with that refusal.
		var provided []modules.Provided
		for _, r := range cfg.routes {
			provided = append(provided, modules.Provided{Type: routeTypes[r.kind], Name: r.name})
		}
		return fx.Module(name, append(decls, modules.ProvideRefused(mod, errs, provided...))...)
	}
	// Enforcement's invoke comes first, so no worker runs on refused wiring.
	parts := append(decls, modules.Provide(mod), fx.Provide(fx.Private, newCore(name, cfg)))
	parts = append(parts, invokes...)
	for _, r := range cfg.routes {
		parts = append(parts, provideRoute(r))
		if r.kind == KindFleet && r.beatEvery > 0 {
			parts = append(parts, fleetHeartbeat(name, r))
		}
	}
	return fx.Module(name, parts...)
}

// routeTypes is the type provideRoute provides for each kind, which a
// refused module provides in its place.
var routeTypes = map[floors.Kind]reflect.Type{
	KindCache:       reflect.TypeFor[*Cache](),
	KindCounter:     reflect.TypeFor[*Counter](),
	KindIdempotency: reflect.TypeFor[*Idempotency](),
	KindLock:        reflect.TypeFor[*Locks](),
	KindPubSub:      reflect.TypeFor[*PubSub](),
	KindStream:      reflect.TypeFor[*Stream](),
	KindFleet:       reflect.TypeFor[*Fleet](),
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
			c.client = newClient(cfg.connect)
			in.Lifecycle.Append(fx.StopHook(c.client.Close))
		case in.Client != nil:
			c.client = in.Client
		default:
			return nil, Rules.WiringInvalid(module, "", "the module has no Redis client",
				"pass redis.Client(c) or redis.Connect(opts), or provide a goredis.UniversalClient in the graph")
		}
		return c, nil
	}
}
