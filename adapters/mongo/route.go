package mongo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Field names the adapter owns in every stored document.
const (
	fieldTenant  = "tenant_id"
	fieldID      = "id"
	fieldVersion = "v"
	fieldDoc     = "doc"
)

// route is what every route kind shares: how a call's context picks the
// client, the collection and the tenant tag.
type route struct {
	core *core
	spec *routeSpec
	// decision is the rules' decision for the route: the only source of
	// its runtime scope.
	decision floors.Decision
	// perTenant: the rules resolve the collection or database per tenant.
	perTenant bool
	// db is the module database on the shared client and coll the
	// route's collection when its name involves no tenant, both made
	// once: a database handle costs nine allocations, a collection ten.
	// Both nil on a routed module (each tenant its own client). Names
	// that involve a tenant are made per call, as a hand-written lookup
	// does; no tenant's handle is kept.
	db   *driver.Database
	coll *driver.Collection
	// tel records each call; nil when the app gave no telemetry.
	tel *telemetry.Route
	// entry admits each call (the kit's steps): its reach is the
	// collection, its version gate the module's RequiredVersion.
	entry *modules.Entry[target]
}

func newRoute(c *core, spec *routeSpec) route {
	d := rules.Decide(spec.floorsRoute(c.pools != nil))
	r := route{core: c, spec: spec, decision: d, perTenant: d.ResolvesPerTenant(roleCollection),
		tel: c.tel.Route(telemetry.RouteInfo{Backend: rules.Name, Module: c.module, Route: spec.name, Kind: string(spec.kind), Reached: d.Reached})}
	if c.pools == nil && c.client != nil {
		r.db = c.client.Database(c.db)
		if !r.perTenant || !spec.coll.perTenantName() {
			r.coll = r.db.Collection(spec.coll.name)
		}
	}
	g := modules.GateOf(modules.GateSpec{Rules: rules, Module: c.module, Route: spec.name, Decision: d, Suspensions: c.suspensions, Telemetry: r.tel})
	// The steps see the route as it is now; nothing they read changes.
	rr := &route{}
	*rr = r
	r.entry = modules.NewEntry(g, rr.reach, rr.ensureCurrent)
	return r
}

// scoped reports whether calls need a bound tenant.
func (r *route) scoped() bool { return r.decision.NeedsTenant }

// target is where one call lands.
type target struct {
	coll *driver.Collection
	// tag is the tenant stamped and filtered on; zero when not tenant-aware.
	tag tenancy.ID
	// server is a routed client's target ("" on the module's client):
	// what the migration check remembers a current tenant with.
	server  string
	release func()
}

func noop() {}

// target resolves the call's collection through the route's entry. A
// tenant-scoped route reads the tenant from ctx and fails closed: there is
// no default tenant and no shared client to fall back to. The call is in
// flight until its target is released, so an Offboard waits for it. The
// call's commands run under the returned context: it carries the call's
// span, so the driver's own spans (otelmongo) nest under it. Without
// telemetry it is ctx.
func (r *route) target(ctx context.Context) (context.Context, target, error) {
	ctx, _, t, done, err := r.entry.Enter(ctx)
	if err != nil {
		return ctx, target{}, err
	}
	t.release = done
	return ctx, t, nil
}

// reach is the entry's step: the collection of tenant id, or the route's
// shared one for zero (a route that needs no tenant). It releases nothing
// on the module's own client.
func (r *route) reach(ctx context.Context, id tenancy.ID) (target, func(), error) {
	if id.IsZero() {
		if r.coll != nil {
			return target{coll: r.coll}, nil, nil
		}
		return target{coll: r.core.client.Database(r.core.db).Collection(r.spec.coll.name)}, nil, nil
	}
	t, err := r.targetFor(ctx, id)
	if err != nil || r.core.pools == nil {
		return t, nil, err
	}
	return t, t.release, nil
}

// withEnd is a target's release followed by the call's end, with no
// closure on the shared client, whose release does nothing.
func (r *route) withEnd(release, end func()) func() {
	if r.core.pools == nil {
		return end
	}
	return modules.Both(release, end)
}

// targetFor resolves the collection of an explicit tenant (provisioning).
func (r *route) targetFor(ctx context.Context, id tenancy.ID) (target, error) {
	if id.IsZero() {
		return target{}, r.unbound()
	}
	client, db, release, server := r.core.client, r.core.db, noop, ""
	if r.core.pools != nil {
		rc, rel, err := r.core.pools.AcquireFor(ctx, id)
		if err != nil {
			return target{}, fmt.Errorf("mongo: route %s: %w", r.spec.name, routing.AtRoute(err, r.spec.name))
		}
		client, db, release, server = rc.client, rc.db, rel, rc.target
	}
	t := target{coll: r.handle(client, db, id), server: server, release: release}
	if r.decision.Tagged {
		t.tag = id
	}
	return t, nil
}

// handle is the collection of tenant id on client, whose default database
// is db.
func (r *route) handle(client *driver.Client, db string, id tenancy.ID) *driver.Collection {
	if r.coll != nil {
		return r.coll
	}
	db, coll := r.spec.coll.resolve(db, id, r.perTenant)
	if r.db != nil && db == r.core.db {
		return r.db.Collection(coll)
	}
	return client.Database(db).Collection(coll)
}

func (r *route) unbound() error { return rules.Unbound(r.core.module, r.spec.name) }

// key is the stored _id of a user id: for a tenant-aware route it is
// prefixed with the tenant, so two tenants may use the same id in one
// collection without either learning of the other.
func (t target) key(id string) string {
	if t.tag.IsZero() {
		return id
	}
	return t.tag.Hex() + ":" + id
}

// filter is the base filter of every statement: the tenant first (when
// tagged), then the caller's conditions.
func (t target) filter(extra ...bson.E) bson.D {
	d := make(bson.D, 0, len(extra)+1)
	if !t.tag.IsZero() {
		d = append(d, bson.E{Key: fieldTenant, Value: t.tag.String()})
	}
	return append(d, extra...)
}

// byID is the filter of one record.
func (t target) byID(id string) bson.D {
	return t.filter(bson.E{Key: "_id", Value: t.key(id)})
}

// stamp prefixes a written document with its _id and tenant.
func (t target) stamp(id string, rest ...bson.E) bson.D {
	d := bson.D{{Key: "_id", Value: t.key(id)}}
	if !t.tag.IsZero() {
		d = append(d, bson.E{Key: fieldTenant, Value: t.tag.String()})
	}
	return append(d, rest...)
}
