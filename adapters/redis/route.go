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
	return r
}

// Name is the route's name.
func (r *route) Name() string { return r.name }

// target resolves the client and the full key of user for the call. A
// tenant-scoped route reads the tenant from ctx and fails closed. done
// returns a routed client to its pool; call it when the call is over.
// The call's commands run under the returned context: it carries the
// call's span, so the client's own spans (redisotel) nest under it.
// Without telemetry it is ctx.
func (r *route) target(ctx context.Context, user string) (context.Context, goredis.UniversalClient, string, func(), error) {
	if r.tel != nil {
		return r.tracedTarget(ctx, user)
	}
	c, key, done, err := r.enter(ctx, user)
	return ctx, c, key, done, err
}

// tracedTarget is target recorded as one call, from its entry until done.
func (r *route) tracedTarget(ctx context.Context, user string) (context.Context, goredis.UniversalClient, string, func(), error) {
	id, _ := tenancy.FromContext(ctx)
	ctx, call := r.tel.Start(ctx, id)
	c, key, done, err := r.enter(ctx, user)
	if err != nil {
		return ctx, nil, "", nil, call.Fail(err)
	}
	return ctx, c, key, call.Done(done), nil
}

func (r *route) enter(ctx context.Context, user string) (goredis.UniversalClient, string, func(), error) {
	return r.enterAs(ctx, user, true)
}

// listen is target for a subscription: checked against the tenant's
// suspension but not held in flight, since it lasts until Close and
// writes nothing an Offboard must wait for.
func (r *route) listen(ctx context.Context, user string) (context.Context, goredis.UniversalClient, string, func(), error) {
	if r.tel != nil {
		id, _ := tenancy.FromContext(ctx)
		ctx, call := r.tel.Start(ctx, id)
		c, key, done, err := r.enterAs(ctx, user, false)
		if err != nil {
			return ctx, nil, "", nil, call.Fail(err)
		}
		return ctx, c, key, call.Done(done), nil
	}
	c, key, done, err := r.enterAs(ctx, user, false)
	return ctx, c, key, done, err
}

func (r *route) enterAs(ctx context.Context, user string, inFlight bool) (goredis.UniversalClient, string, func(), error) {
	if !r.scoped {
		return r.core.client, buildKey(r.marker, "", tenancy.ID{}, r.code, r.name, user), nop, nil
	}
	id, err := tenancy.Require(ctx)
	if err != nil {
		return nil, "", nil, r.unbound()
	}
	// The call is in flight (Suspensions.Enter) until done, so an
	// Offboard waits for its command (or script) before the teardown.
	end, err := r.core.suspensions.Enter(id, rules.Name, r.core.module, r.name)
	if err != nil {
		return nil, "", nil, err
	}
	if !inFlight {
		end()
		end = nop
	}
	var ns string
	if r.ns != nil {
		if ns, err = r.namespace(id); err != nil {
			end()
			return nil, "", nil, err
		}
	}
	c, done := r.core.client, end
	if r.core.routes != nil {
		var release func()
		if c, release, err = r.core.routes.client(ctx, id); err != nil {
			end()
			return nil, "", nil, routing.AtRoute(err, r.name)
		}
		done = modules.Both(release, end)
	}
	return c, buildKey(r.marker, ns, id, r.code, r.name, user), done, nil
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

func (r *route) unbound() error { return rules.Unbound(r.core.module, r.name) }

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
	return fx.Provide(fx.Annotate(ctor, fx.ResultTags(nameTag(spec.name))))
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
