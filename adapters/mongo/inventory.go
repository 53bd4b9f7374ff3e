package mongo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// mongoFamily is one family of a tenant's data: where it lives and how
// Teardown removes it (remove) and Verify counts what is left (count, with
// one of what it found).
type mongoFamily struct {
	migrate.Family
	remove func(context.Context) error
	count  func(context.Context) (n int64, sample string, err error)
}

// walk visits every family the module holds for tenant, each container
// once: a route's per-tenant database or collection, a routed route's
// collection in the tenant's own database (all of it the tenant's, tagged
// or not), the tenant's documents in a tagged route's shared collection
// (outbox and search collections included), its migration records beside
// the home route's per-tenant container and, when routed, the tenant's
// own database as a whole. Teardown and Verify both walk it.
func (p *lifecycleTarget) walk(ctx context.Context, tenant tenancy.ID, visit func(context.Context, mongoFamily) error) error {
	seen := map[string]bool{}
	for _, spec := range p.routes {
		r := newRoute(p.core, spec)
		if !r.perTenant && !r.decision.Tagged && !r.decision.Routed {
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
				count: func(ctx context.Context) (int64, string, error) {
					names, err := db.ListCollectionNames(ctx, bson.D{})
					return int64(len(names)), db.Name(), err
				}}
		case r.perTenant || r.decision.Routed:
			f = mongoFamily{Family: migrate.Family{Name: "collection", Kind: migrate.KindCollection, Where: coll.Database().Name() + "." + coll.Name(), Route: spec.name},
				remove: func(ctx context.Context) error { return coll.Drop(ctx) },
				count: func(ctx context.Context) (int64, string, error) {
					names, err := coll.Database().ListCollectionNames(ctx, bson.D{{Key: "name", Value: coll.Name()}})
					return int64(len(names)), coll.Database().Name() + "." + coll.Name(), err
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
	if err := p.records(ctx, tenant, visit); err != nil {
		return err
	}
	return p.ownDatabase(ctx, tenant, visit)
}

// tagged is the family of the documents of coll that filter selects.
func tagged(name string, coll *driver.Collection, filter bson.D, route string) mongoFamily {
	where := coll.Database().Name() + "." + coll.Name()
	return mongoFamily{Family: migrate.Family{Name: name, Kind: migrate.KindRows, Where: where, Route: route},
		remove: func(ctx context.Context) error { return deleteInBatches(ctx, coll, filter) },
		count: func(ctx context.Context) (int64, string, error) {
			n, err := coll.CountDocuments(ctx, filter)
			return n, where, err
		}}
}

// deleteBatch bounds one delete of a tenant's documents in a shared
// collection: a delete of every one at once is one operation as long as
// the tenant is large (FerretDB's SQLite backend refuses one of 100,000
// documents outright).
const deleteBatch = 10_000

// deleteInBatches deletes the documents filter selects, deleteBatch at a
// time by _id; a rerun after a cut completes it.
func deleteInBatches(ctx context.Context, coll *driver.Collection, filter bson.D) error {
	for {
		cur, err := coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetLimit(deleteBatch))
		if err != nil {
			return err
		}
		var ids []any
		for cur.Next(ctx) {
			ids = append(ids, cur.Current.Lookup("_id"))
		}
		if err := errors.Join(cur.Err(), cur.Close(ctx)); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		// The filter again: an _id is unique in the collection, but the
		// delete takes only documents it still selects.
		del := append(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}, filter...)
		if _, err := coll.DeleteMany(ctx, del); err != nil {
			return err
		}
		if len(ids) < deleteBatch {
			return nil
		}
	}
}

// records visits tenant's migration records once the home route's
// containers are dropped (they hold what the records describe); a home
// route the tenant shares keeps them, and a reprovisioned tenant starts
// at version 0. A routed tenant's records are in its own database.
func (p *lifecycleTarget) records(ctx context.Context, tenant tenancy.ID, visit func(context.Context, mongoFamily) error) error {
	if len(p.routes) == 0 {
		return nil
	}
	hr := newRoute(p.core, p.core.home(p.routes))
	if !hr.perTenant && p.core.pools == nil {
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

// ownDatabase visits a routed tenant's own database as a whole: its
// credentials give it to this tenant alone (the pools refuse a second
// tenant on it), so every collection in it is the tenant's, one no route
// declares included. Its removal is the framework's collections once
// empty (the routes' collections and the records are removed before it);
// its count is every collection the families before it do not count but
// the identity token's, which the check's own client writes back when it
// opens (it names the database, nothing of the tenant's). Nothing on a
// plain client.
func (p *lifecycleTarget) ownDatabase(ctx context.Context, tenant tenancy.ID, visit func(context.Context, mongoFamily) error) error {
	if p.core.pools == nil {
		return nil
	}
	rc, release, err := p.core.pools.AcquireFor(ctx, tenant)
	if err != nil {
		return fmt.Errorf("mongo: offboarding for %s: the tenant database: %w", tenant, err)
	}
	defer release()
	db := rc.client.Database(rc.db)
	counted := bson.A{identityColl, migrationColl}
	for _, spec := range p.routes {
		if name, coll := spec.coll.resolve(rc.db, tenant, newRoute(p.core, spec).perTenant); name == rc.db {
			counted = append(counted, coll)
		}
	}
	f := mongoFamily{Family: migrate.Family{Name: "tenant database", Kind: migrate.KindDatabase, Where: rc.target},
		remove: func(ctx context.Context) error {
			// Another module's records may share the collection; the
			// last module's teardown drops it.
			records := db.Collection(migrationColl)
			n, err := records.CountDocuments(ctx, bson.D{})
			if err == nil && n == 0 {
				err = records.Drop(ctx)
			}
			if err == nil {
				err = db.Collection(identityColl).Drop(ctx)
			}
			return err
		},
		count: func(ctx context.Context) (int64, string, error) {
			names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$nin", Value: counted}}}})
			return int64(len(names)), rc.db + ": " + strings.Join(names, ", "), err
		}}
	if err := visit(ctx, f); err != nil {
		return fmt.Errorf("mongo: offboarding for %s: the tenant database %s: %w", tenant, rc.target, err)
	}
	return nil
}

// Teardown drops tenant's per-tenant collections and databases and, when
// routed, its routes' collections in its own database; deletes its
// documents from tagged routes' shared collections and its migration
// records beside its own containers: every family of walk. Shared
// collections are never dropped. A routed tenant's client stays bound:
// the verifier that follows reuses it (a new one would write the
// database's identity back) and evicts it.
func (p *lifecycleTarget) Teardown(ctx context.Context, tenant tenancy.ID) error {
	return p.walk(ctx, tenant, func(ctx context.Context, f mongoFamily) error { return f.remove(ctx) })
}

// TeardownMany is Teardown for each tenant in turn (OffboardAll), which
// no verifier follows: a routed tenant's client is evicted after its
// teardown here, so an offboarded tenant keeps no client open.
func (p *lifecycleTarget) TeardownMany(ctx context.Context, tenants []tenancy.ID) []error {
	errs := make([]error, len(tenants))
	for i, id := range tenants {
		errs[i] = p.Teardown(ctx, id)
		if p.core.pools != nil {
			p.core.pools.Evict(id)
		}
	}
	return errs
}

// Verify counts what is left of every family of walk on the server. A
// family it cannot count is an error, never nothing found. A routed
// tenant's client is evicted after the check: an offboarded tenant keeps
// no client open.
func (p *lifecycleTarget) Verify(ctx context.Context, tenant tenancy.ID) (migrate.Erasure, error) {
	if p.core.pools != nil {
		defer p.core.pools.Evict(tenant)
	}
	var e migrate.Erasure
	err := p.walk(ctx, tenant, func(ctx context.Context, f mongoFamily) error {
		n, sample, err := f.count(ctx)
		if err == nil {
			e.Check(f.Family, n, sample)
		}
		return err
	})
	return e, err
}
