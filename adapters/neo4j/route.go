package neo4j

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// route is what both route kinds share: how a call's context picks the
// driver and the database, and whether the tenant predicate applies.
type route struct {
	core *core
	spec *routeSpec
	// scoped: calls need a bound tenant.
	scoped bool
	// perTenantDB: the rules resolve the database per tenant.
	perTenantDB bool
	// tagged: the tenant predicate applies to every pattern.
	tagged bool
	// tel records each call; nil when the app gave no telemetry.
	tel *telemetry.Route
	// entry admits each call (the kit's steps): its reach is the scope
	// and its session, its version gate the module's RequiredVersion.
	entry *modules.Entry[scope]
}

// newRoute applies the rules' decision for the route; nothing here
// re-derives the scope from the route's options.
func newRoute(c *core, spec *routeSpec) *route {
	d := rules.Decide(spec.floorsRoute(c.routed()))
	r := &route{core: c, spec: spec, scoped: d.NeedsTenant,
		perTenantDB: d.ResolvesPerTenant(roleDatabase), tagged: d.Tagged,
		tel: c.tel.Route(telemetry.RouteInfo{Backend: rules.Name, Module: c.module, Route: spec.name, Kind: string(spec.kind), Reached: d.Reached})}
	g := modules.GateOf(modules.GateSpec{Rules: rules, Module: c.module, Route: spec.name, Decision: d, Suspensions: c.suspensions, Telemetry: r.tel})
	r.entry = modules.NewEntry(g, r.reach, r.current)
	return r
}

// scope is what a transaction pins for its whole life.
type scope struct {
	tenant   tenancy.ID // zero on an unscoped route
	drv      driver
	database string
	// target names the database for the migration check: the module's
	// database, a tenant's database, or a routed server and database.
	target  string
	release func()
	// sess is the call's session, opened by the entry's reach.
	sess session
}

// reach is the entry's step: the scope of a call for tenant id (zero on
// an unscoped route: the module's database), the tenant's driver when
// routed and its database when resolved, and a session on it. The call
// is in flight until the entry's end, after its transaction and the
// session's close, so an Offboard waits for it.
func (r *route) reach(ctx context.Context, id tenancy.ID) (scope, func(), error) {
	sc := scope{drv: r.core.plain, database: r.core.database, target: r.core.database, release: func() {}}
	if !id.IsZero() {
		var err error
		if sc, err = r.openFor(ctx, id); err != nil {
			return scope{}, nil, err
		}
	}
	sess, release := sc.drv.NewSession(ctx, sc.database), sc.release
	sc.sess = sess
	return sc, func() { _ = sess.Close(ctx); release() }, nil
}

// current is the entry's version gate, before the transaction: a stale
// tenant's call never reaches its data. A database all tenants share has
// one version; one that is not there has no history: not provisioned,
// rather than behind.
func (r *route) current(ctx context.Context, _ tenancy.ID, sc scope) error {
	if r.core.gate == nil {
		return nil
	}
	tenant := sc.tenant
	if !r.perTenantDB && !r.core.routed() {
		tenant = tenancy.ID{}
	}
	if err := r.core.ensureCurrent(ctx, sc.sess, tenant, sc.target, r.spec.name); err != nil {
		if r.missingDatabase(err, sc.tenant) {
			return r.notProvisioned(err, sc.tenant, sc.database)
		}
		return err
	}
	return nil
}

// openFor is open for an explicit tenant (provisioning).
func (r *route) openFor(ctx context.Context, id tenancy.ID) (scope, error) {
	if id.IsZero() {
		return scope{}, r.unbound()
	}
	sc := scope{tenant: id, drv: r.core.plain, database: r.core.database, target: r.core.database, release: func() {}}
	if r.core.routed() {
		td, release, err := r.core.pools.AcquireFor(ctx, id)
		if err != nil {
			var te *tenancy.Error
			if errors.As(err, &te) && te.Code == tenancy.CodeTenantUnbound {
				return scope{}, r.unbound()
			}
			if r.missingDatabase(err, id) { // no database of the credentials' name
				return scope{}, r.notProvisioned(err, id, "")
			}
			return scope{}, fmt.Errorf("neo4j: route %s: %w", r.spec.name, routing.AtRoute(err, r.spec.name))
		}
		sc.drv, sc.release, sc.target = td.drv, release, td.target
		if td.database != "" {
			sc.database = td.database
		}
	}
	if r.perTenantDB {
		name, err := r.databaseName(id)
		if err != nil {
			sc.release()
			return scope{}, err
		}
		sc.database = name
		if r.core.routed() {
			sc.target += "|" + name
		} else {
			sc.target = name
		}
	}
	return sc, nil
}

func (r *route) databaseName(id tenancy.ID) (string, error) {
	name, err := r.spec.database(id)
	if err != nil {
		return "", fmt.Errorf("neo4j: route %s: database resolver: %w", r.spec.name, err)
	}
	if err := ValidDatabaseName(name); err != nil {
		return "", fmt.Errorf("neo4j: route %s: %w", r.spec.name, err)
	}
	return name, nil
}

// checkScope refuses a call inside a transaction whose ctx is unbound or
// bound to a tenant other than the one the scope pinned.
func (r *route) checkScope(ctx context.Context, sc scope) error {
	if !r.scoped {
		return nil
	}
	id, ok := tenancy.FromContext(ctx)
	if !ok {
		return r.unbound()
	}
	if id != sc.tenant {
		return &tenancy.Error{Code: tenancy.CodeTenantScopeChanged, Module: r.core.module, Backend: rules.Name,
			Route:  r.spec.name,
			Detail: fmt.Sprintf("a call inside a transaction of tenant %s ran under tenant %s", sc.tenant, id),
			Fix:    "pass the transaction's own context to every call inside it; start a separate transaction for another tenant"}
	}
	return nil
}

// builder is the statement builder for a scope: tagged when the route is
// tenant-aware, with the scope's tenant as $tenant.
func (r *route) builder(sc scope) builder {
	return builder{tagged: r.tagged, tenant: sc.tenant.String(), module: r.core.module, route: r.spec.name}
}

// transact runs fn in one managed transaction on the session of the
// call's entry: one span for the whole call, outcome included; the
// driver's own spans, if it is instrumented, nest under it.
func (r *route) transact(ctx context.Context, write bool, fn func(context.Context, *txn) error) error {
	ctx, _, sc, held, err := r.entry.Open(ctx)
	if err != nil {
		return err
	}
	err = r.run(ctx, sc, write, fn)
	held.End(err)
	return err
}

func (r *route) run(ctx context.Context, sc scope, write bool, fn func(context.Context, *txn) error) (err error) {
	sess := sc.sess
	work := func(run runner) (any, error) {
		tx := &txn{r: r, sc: sc, run: run, write: write}
		defer tx.done.Store(true)
		return nil, fn(ctx, tx)
	}
	// Errors inside work stay unwrapped: the driver's retry decision
	// type-asserts them.
	if write {
		_, err = sess.ExecuteWrite(ctx, work)
	} else {
		_, err = sess.ExecuteRead(ctx, work)
	}
	var te *tenancy.Error
	if err != nil && !errors.As(err, &te) && !errors.Is(err, ErrNotFound) {
		if r.missingDatabase(err, sc.tenant) {
			return r.notProvisioned(err, sc.tenant, sc.database)
		}
		return fmt.Errorf("neo4j: route %s: %w", r.spec.name, err)
	}
	return err
}

func (r *route) unbound() error { return rules.Unbound(r.core.module, r.spec.name) }
