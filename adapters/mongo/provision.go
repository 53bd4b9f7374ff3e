package mongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Provisioner is a module's lifecycle (the embedded *migrate.Runner:
// Provision, MigrateAll, Teardown...) and its routed clients' eviction;
// provided as *mongo.Provisioner name:"<module>", the runner also as
// *migrate.Runner name:"<module>".
type Provisioner struct {
	*migrate.Runner
	core *core
}

// lifecycleTarget is the module's side of its migrate.Runner.
type lifecycleTarget struct {
	core     *core
	routes   []*routeSpec
	teardown bool
}

func (t *lifecycleTarget) runner(registry migrate.Registry) *migrate.Runner {
	return migrate.NewRunner(migrate.Spec{Module: t.core.module, Backend: rules.Name, Set: t.core.migrations.set, Registry: registry, Gate: t.core.gate,
		PerTenant: true, AllowTeardown: t.teardown}, t)
}

// Provision creates, for tenant, every collection of the module's routes
// and their indexes. It is idempotent: existing collections and indexes
// are kept. Shared collections are created too (on the tenant's own
// client when routed); the zero tenant has nothing of its own.
func (t *lifecycleTarget) Provision(ctx context.Context, tenant tenancy.ID) error {
	if tenant.IsZero() {
		return nil
	}
	for _, spec := range t.routes {
		r := newRoute(t.core, spec)
		tg, err := t.target(ctx, &r, tenant)
		if err != nil {
			return err
		}
		err = provisionOne(ctx, tg.coll, spec)
		tg.release()
		if err != nil {
			return fmt.Errorf("mongo: provision %s for %s: %w", spec.name, tenant, err)
		}
	}
	return nil
}

func (t *lifecycleTarget) target(ctx context.Context, r *route, tenant tenancy.ID) (target, error) {
	if r.scoped() {
		return r.targetFor(ctx, tenant)
	}
	_, tg, err := r.target(ctx)
	return tg, err
}

func provisionOne(ctx context.Context, coll *driver.Collection, spec *routeSpec) error {
	err := coll.Database().CreateCollection(ctx, coll.Name())
	var ce driver.CommandError
	if err != nil && !(errors.As(err, &ce) && ce.Code == 48) { // 48: NamespaceExists
		return err
	}
	idx := provisionIndexes(spec)
	if len(idx) == 0 {
		return nil
	}
	_, err = coll.Indexes().CreateMany(ctx, idx)
	return err
}

// provisionIndexes is the indexes Provision creates on a route's
// collection, each named.
func provisionIndexes(spec *routeSpec) []driver.IndexModel {
	switch spec.kind {
	case kindDocument:
		keys := bson.D{{Key: fieldID, Value: 1}}
		if spec.cfg.TenantAware {
			keys = append(bson.D{{Key: fieldTenant, Value: 1}}, keys...)
		}
		return []driver.IndexModel{{Keys: keys, Options: options.Index().SetName(spec.name + "_id")}}
	case kindSearch:
		return searchIndexes(spec)
	case kindOutbox:
		return outboxIndexes(spec)
	}
	return nil
}

// Evict forgets tenant's routed client binding (after a credential
// rotation or offboarding): its next call resolves credentials again, and
// a client no other tenant uses is disconnected once its calls finish. A
// no-op on a plain client.
func (p *Provisioner) Evict(tenant tenancy.ID) {
	if p.core.pools != nil {
		p.core.pools.Evict(tenant)
	}
}
