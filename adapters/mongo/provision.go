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

// Provisioner creates a tenant's collections with their indexes, and
// drops them when teardown was explicitly allowed (AllowTeardown).
type Provisioner struct {
	core     *core
	routes   []*routeSpec
	teardown bool
}

// ErrTeardownDisabled is returned by Teardown unless the module was built
// with AllowTeardown.
var ErrTeardownDisabled = migrate.ErrTeardownDisabled

// Provision creates, for tenant, every collection of the module's routes
// and their indexes. It is idempotent: existing collections and indexes
// are kept. Shared collections are created too (on the tenant's own
// client when routed).
func (p *Provisioner) Provision(ctx context.Context, tenant tenancy.ID) error {
	for _, spec := range p.routes {
		r := newRoute(p.core, spec)
		t, err := p.target(ctx, &r, tenant)
		if err != nil {
			return err
		}
		err = provisionOne(ctx, t.coll, spec)
		t.release()
		if err != nil {
			return fmt.Errorf("mongo: provision %s for %s: %w", spec.name, tenant, err)
		}
	}
	return nil
}

func (p *Provisioner) target(ctx context.Context, r *route, tenant tenancy.ID) (target, error) {
	if r.scoped() {
		return r.targetFor(ctx, tenant)
	}
	return r.target(ctx)
}

func provisionOne(ctx context.Context, coll *driver.Collection, spec *routeSpec) error {
	err := coll.Database().CreateCollection(ctx, coll.Name())
	var ce driver.CommandError
	if err != nil && !(errors.As(err, &ce) && ce.Code == 48) { // 48: NamespaceExists
		return err
	}
	var idx []driver.IndexModel
	switch spec.kind {
	case kindDocument:
		keys := bson.D{{Key: fieldID, Value: 1}}
		if spec.cfg.TenantAware {
			keys = append(bson.D{{Key: fieldTenant, Value: 1}}, keys...)
		}
		idx = []driver.IndexModel{{Keys: keys, Options: options.Index().SetName(spec.name + "_id")}}
	case kindSearch:
		idx = searchIndexes(spec)
	case kindOutbox:
		idx = outboxIndexes(spec)
	}
	if len(idx) == 0 {
		return nil
	}
	_, err = coll.Indexes().CreateMany(ctx, idx)
	return err
}

// Teardown drops tenant's per-tenant collections and per-tenant databases,
// and, when its migration records sit beside them, the records too (a
// reprovisioned tenant starts at version 0). Shared collections are never
// dropped. Disabled unless AllowTeardown.
func (p *Provisioner) Teardown(ctx context.Context, tenant tenancy.ID) error {
	if err := migrate.CheckTeardown(p.teardown, tenant); err != nil {
		return err
	}
	// Even a partial teardown leaves the tenant's containers behind their
	// version: its next call reads it again.
	defer p.core.gate.Forget(tenant)
	for _, spec := range p.routes {
		r := newRoute(p.core, spec)
		if !r.perTenant {
			continue
		}
		t, err := r.targetFor(ctx, tenant)
		if err != nil {
			return err
		}
		if spec.coll.dbPrefix != "" {
			err = t.coll.Database().Drop(ctx)
		} else {
			err = t.coll.Drop(ctx)
		}
		t.release()
		if err != nil {
			return fmt.Errorf("mongo: teardown %s for %s: %w", spec.name, tenant, err)
		}
	}
	return p.dropRecords(ctx, tenant)
}

// dropRecords deletes tenant's migration records once the home route's
// containers are dropped (they hold what the records describe); a home
// route the tenant shares keeps them.
func (p *Provisioner) dropRecords(ctx context.Context, tenant tenancy.ID) error {
	if len(p.routes) == 0 {
		return nil
	}
	hr := newRoute(p.core, p.core.home(p.routes))
	if !hr.perTenant {
		return nil
	}
	t, err := hr.targetFor(ctx, tenant)
	if err != nil {
		return err
	}
	defer t.release()
	_, err = t.coll.Database().Collection(migrationColl).DeleteMany(ctx, bson.D{{Key: "module", Value: p.core.module}, {Key: "tenant", Value: tenant.Hex()}})
	if err != nil {
		return fmt.Errorf("mongo: teardown for %s: migration records: %w", tenant, err)
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
