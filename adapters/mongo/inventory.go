package mongo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// mongoFamily is one family of a tenant's data: where it lives and how
// Teardown removes it (remove) and Verify counts what is left (count).
type mongoFamily struct {
	migrate.Family
	remove func(context.Context) error
	count  func(context.Context) (int64, error)
}

// walk visits every family the module holds for tenant, each container
// once: a route's per-tenant database or collection, the tenant's
// documents in a tagged route's shared collection (outbox and search
// collections included), and its migration records beside the home
// route's per-tenant container. Teardown and Verify both walk it.
func (p *lifecycleTarget) walk(ctx context.Context, tenant tenancy.ID, visit func(context.Context, mongoFamily) error) error {
	seen := map[string]bool{}
	for _, spec := range p.routes {
		r := newRoute(p.core, spec)
		if !r.perTenant && !r.decision.Tagged {
			continue
		}
		t, err := r.targetFor(ctx, tenant)
		if err != nil {
			return err
		}
		coll := t.coll
		var f mongoFamily
		switch {
		case r.perTenant && spec.coll.dbPrefix != "":
			db := coll.Database()
			f = mongoFamily{Family: migrate.Family{Name: "database", Kind: migrate.KindDatabase, Where: db.Name(), Route: spec.name},
				remove: db.Drop,
				count: func(ctx context.Context) (int64, error) {
					names, err := db.ListCollectionNames(ctx, bson.D{})
					return int64(len(names)), err
				}}
		case r.perTenant:
			f = mongoFamily{Family: migrate.Family{Name: "collection", Kind: migrate.KindCollection, Where: coll.Database().Name() + "." + coll.Name(), Route: spec.name},
				remove: func(ctx context.Context) error { return coll.Drop(ctx) },
				count: func(ctx context.Context) (int64, error) {
					names, err := coll.Database().ListCollectionNames(ctx, bson.D{{Key: "name", Value: coll.Name()}})
					return int64(len(names)), err
				}}
		default:
			f = tagged("tagged documents", coll, bson.D{{Key: fieldTenant, Value: tenant.String()}}, spec.name)
		}
		key := string(f.Kind) + "|" + t.server + "|" + f.Where
		if !seen[key] {
			seen[key] = true
			err = visit(ctx, f)
		}
		t.release()
		if err != nil {
			return fmt.Errorf("mongo: offboarding %s for %s: %s %s: %w", spec.name, tenant, f.Kind, f.Where, err)
		}
	}
	return p.records(ctx, tenant, visit)
}

// tagged is the family of the documents of coll that filter selects.
func tagged(name string, coll *driver.Collection, filter bson.D, route string) mongoFamily {
	return mongoFamily{Family: migrate.Family{Name: name, Kind: migrate.KindRows, Where: coll.Database().Name() + "." + coll.Name(), Route: route},
		remove: func(ctx context.Context) error { _, err := coll.DeleteMany(ctx, filter); return err },
		count:  func(ctx context.Context) (int64, error) { return coll.CountDocuments(ctx, filter) }}
}

// records visits tenant's migration records once the home route's
// containers are dropped (they hold what the records describe); a home
// route the tenant shares keeps them, and a reprovisioned tenant starts
// at version 0.
func (p *lifecycleTarget) records(ctx context.Context, tenant tenancy.ID, visit func(context.Context, mongoFamily) error) error {
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
	f := tagged("migration records", t.coll.Database().Collection(migrationColl),
		bson.D{{Key: "module", Value: p.core.module}, {Key: "tenant", Value: tenant.Hex()}}, "")
	f.Kind = migrate.KindHistory
	if err := visit(ctx, f); err != nil {
		return fmt.Errorf("mongo: offboarding for %s: migration records: %w", tenant, err)
	}
	return nil
}

// Teardown drops tenant's per-tenant collections and databases, deletes
// its documents from tagged routes' shared collections and its migration
// records beside its own containers: every family of walk. Shared
// collections are never dropped.
func (p *lifecycleTarget) Teardown(ctx context.Context, tenant tenancy.ID) error {
	return p.walk(ctx, tenant, func(ctx context.Context, f mongoFamily) error { return f.remove(ctx) })
}

// Verify counts what is left of every family of walk on the server.
func (p *lifecycleTarget) Verify(ctx context.Context, tenant tenancy.ID) (migrate.Erasure, error) {
	var e migrate.Erasure
	err := p.walk(ctx, tenant, func(ctx context.Context, f mongoFamily) error {
		n, err := f.count(ctx)
		if err == nil {
			e.Check(f.Family, n, f.Where)
		}
		return err
	})
	return e, err
}
