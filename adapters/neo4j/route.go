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
}

// newRoute applies the rules' decision for the route; nothing here
// re-derives the scope from the route's options.
func newRoute(c *core, spec *routeSpec) *route {
	d := rules.Decide(spec.floorsRoute(c.routed()))
	return &route{core: c, spec: spec, scoped: d.NeedsTenant,
		perTenantDB: d.ResolvesPerTenant(roleDatabase), tagged: d.Tagged,
		tel: c.tel.Route(telemetry.RouteInfo{Backend: rules.Name, Module: c.module, Route: spec.name, Kind: string(spec.kind), Reached: d.Reached})}
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
}

// open resolves the scope of a call: the tenant from ctx (fail closed), the
// tenant's driver when routed, and the tenant's database when resolved.
func (r *route) open(ctx context.Context) (scope, error) {
	if !r.scoped {
		return scope{drv: r.core.plain, database: r.core.database, target: r.core.database, release: func() {}}, nil
	}
	id, err := tenancy.Require(ctx)
	if err != nil {
		return scope{}, r.unbound()
	}
	// The call is in flight (Suspensions.Enter) until the scope is
	// released, after its transaction, so an Offboard waits for it.
	end, err := r.core.suspensions.Enter(id, rules.Name, r.core.module, r.spec.name)
	if err != nil {
		return scope{}, err
	}
	sc, err := r.openFor(ctx, id)
	if err != nil {
		end()
		return scope{}, err
	}
	sc.release = modules.Both(sc.release, end)
	return sc, nil
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

// transact runs fn in one managed transaction on the scope's session.
func (r *route) transact(ctx context.Context, write bool, fn func(context.Context, *txn) error) error {
	if r.tel != nil {
		// One span for the whole call, outcome included; the driver's own
		// spans, if it is instrumented, nest under it.
		id, _ := tenancy.FromContext(ctx)
		ctx, call := r.tel.Start(ctx, id)
		err := r.run(ctx, write, fn)
		call.End(err)
		return err
	}
	return r.run(ctx, write, fn)
}

func (r *route) run(ctx context.Context, write bool, fn func(context.Context, *txn) error) error {
	sc, err := r.open(ctx)
	if err != nil {
		return err
	}
	defer sc.release()
	sess := sc.drv.NewSession(ctx, sc.database)
	defer sess.Close(ctx)
	if r.core.gate != nil {
		// Before the transaction: a stale tenant's call never reaches
		// its data. A database all tenants share has one version.
		tenant := sc.tenant
		if !r.perTenantDB && !r.core.routed() {
			tenant = tenancy.ID{}
		}
		if err := r.core.ensureCurrent(ctx, sess, tenant, sc.target, r.spec.name); err != nil {
			// A database that is not there has no history: not
			// provisioned, rather than behind.
			if r.missingDatabase(err, sc.tenant) {
				return r.notProvisioned(err, sc.tenant, sc.database)
			}
			return err
		}
	}
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
