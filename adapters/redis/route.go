package redis

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// route is what every route kind shares: where its keys live and how a
// call's context picks the client and the key.
type route struct {
	core   *core
	name   string
	kind   floors.Kind
	code   byte
	marker string
	// scoped: calls need a bound tenant.
	scoped bool
	ns     nsFunc
	// nsc holds ns's recent answers; set with ns.
	nsc *nsCache
	// tel records each call; nil when the app gave no telemetry.
	tel *telemetry.Route
	// entry admits each call (the kit's steps) and reaches its client.
	entry *modules.Entry[reached]
}

// reached is what a call's entry reaches: the client its commands run on
// and the tenant's namespace ("" on a route without one).
type reached struct {
	c  goredis.UniversalClient
	ns string
}

// newRoute applies the rules' decision for the route: whether calls need
// a tenant, and which key segments (routed, namespace, tenant) its keys
// carry. Nothing here re-derives the scope from the route's options.
func newRoute(c *core, spec *routeSpec) route {
	fr := spec.floorsRoute(c.routes != nil)
	d := rules.Decide(fr)
	namespace := d.ResolvesPerTenant(fr.Relations[0].Role)
	r := route{
		core: c, name: spec.name, kind: spec.kind, code: kindCode[spec.kind],
		marker: scopeMarker(d.Global, d.Routed, namespace, d.Tagged),
		scoped: d.NeedsTenant,
		tel:    c.tel.Route(telemetry.RouteInfo{Backend: rules.Name, Module: c.module, Route: spec.name, Kind: string(spec.kind), Reached: d.Reached}),
	}
	if namespace {
		r.ns, r.nsc = spec.namespace, newNSCache()
	}
	g := modules.GateOf(modules.GateSpec{Rules: rules, Module: c.module, Route: spec.name, Decision: d, Suspensions: c.suspensions, Telemetry: r.tel})
	// The reach sees the route's fields as they are now: ns and nsc are
	// fixed from here on.
	rr := &route{}
	*rr = r
	r.entry = modules.NewEntry(g, rr.reach, nil)
	return r
}

// Name is the route's name.
func (r *route) Name() string { return r.name }

// target resolves the client and the full key of user for the call. A
// tenant-scoped route reads the tenant from ctx and fails closed. done
// ends the call (it is in flight until then, so an Offboard waits for its
// command or script) and returns a routed client to its pool. The call's
// commands run under the returned context: it carries the call's span, so
// the client's own spans (redisotel) nest under it. Without telemetry it
// is ctx.
func (r *route) target(ctx context.Context, user string) (context.Context, goredis.UniversalClient, string, func(), error) {
	ctx, id, t, done, err := r.entry.Enter(ctx)
	if err != nil {
		return ctx, nil, "", nil, err
	}
	return ctx, t.c, buildKey(r.marker, t.ns, id, r.code, r.name, user), done, nil
}

// enter is target without the call's context.
func (r *route) enter(ctx context.Context, user string) (goredis.UniversalClient, string, func(), error) {
	_, c, key, done, err := r.target(ctx, user)
	return c, key, done, err
}

// listen is target for a subscription: checked against the tenant's
// suspension but not held in flight, since it lasts until Close and
// writes nothing an Offboard must wait for.
func (r *route) listen(ctx context.Context, user string) (context.Context, goredis.UniversalClient, string, func(), error) {
	ctx, id, t, done, err := r.entry.Listen(ctx)
	if err != nil {
		return ctx, nil, "", nil, err
	}
	return ctx, t.c, buildKey(r.marker, t.ns, id, r.code, r.name, user), done, nil
}

// reach is the entry's step for tenant id (zero on an unscoped route):
// its namespace, then its routed client, or the module's client.
func (r *route) reach(ctx context.Context, id tenancy.ID) (reached, func(), error) {
	if id.IsZero() {
		return reached{c: r.core.client}, nil, nil
	}
	var t reached
	if r.ns != nil {
		ns, err := r.namespace(id)
		if err != nil {
			return t, nil, err
		}
		t.ns = ns
	}
	if r.core.routes == nil {
		t.c = r.core.client
		return t, nil, nil
	}
	c, release, err := r.core.routes.client(ctx, id)
	if err != nil {
		return t, nil, routing.AtRoute(err, r.name)
	}
	t.c = c
	return t, release, nil
}

func nop() {}

// namespace resolves and validates the tenant's namespace, or takes it
// from the route's cache.
func (r *route) namespace(id tenancy.ID) (string, error) {
	if ns, ok := r.nsc.get(id); ok {
		return ns, nil
	}
	ns, err := r.ns(id)
	if err != nil {
		return "", fmt.Errorf("redis: route %s: namespace resolver: %w", r.name, err)
	}
	if err := validName("namespace", ns); err != nil {
		return "", fmt.Errorf("route %s: %w", r.name, err)
	}
	r.nsc.put(id, ns)
	return ns, nil
}

// provideRoute provides the route's runtime object under its name.
func provideRoute(spec *routeSpec) fx.Option {
	var ctor any
	switch spec.kind {
	case kindCache:
		ctor = func(c *core) *Cache { return &Cache{route: served(c, spec)} }
	case kindCounter:
		ctor = func(c *core) *Counter { return &Counter{route: served(c, spec)} }
	case kindIdempotency:
		ctor = func(c *core) *Idempotency { return &Idempotency{route: served(c, spec), ttl: spec.ttl} }
	case kindLock:
		ctor = func(c *core) *Locks { return &Locks{route: served(c, spec)} }
	case kindPubSub:
		ctor = func(c *core) *PubSub { return &PubSub{route: served(c, spec)} }
	case kindStream:
		ctor = func(c *core) *Stream {
			s := newStream(served(c, spec))
			c.forgetters.add(s.forgetTenant)
			return s
		}
	case kindFleet:
		ctor = func(c *core) *Fleet { return newFleet(served(c, spec), spec) }
	default:
		return fx.Error(fmt.Errorf("redis: unknown route kind %q", spec.kind))
	}
	return fx.Provide(fx.Annotate(ctor, fx.ResultTags(nameTag(spec.as))))
}

// served is the route a module serves: newRoute, its namespace cache
// dropped for a tenant that is offboarded.
func served(c *core, spec *routeSpec) route {
	r := newRoute(c, spec)
	if r.nsc != nil {
		c.forgetters.add(r.nsc.drop)
	}
	return r
}
