package mongo

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// DocumentConfig is a document route's RouteConfig, under the name the
// other backends give their document route's config.
type DocumentConfig = RouteConfig

// Document adds a document route over values of type T and provides
// *Documents[T], unnamed and name:"<route>". One document route per
// value type per app.
func Document[T any](name string, cfg RouteConfig) Option {
	return modules.Own(func(c *config) {
		// A spec per application: Placements applies the option once per
		// placement.
		rc := c.inShared(cfg)
		spec := &routeSpec{name: name, kind: kindDocument, cfg: rc, coll: collectionOf(rc)}
		typ := reflect.TypeFor[*Documents[T]]()
		newDocs := func(co *core) *Documents[T] { return &Documents[T]{route: newRoute(co, spec)} }
		if c.placed != nil {
			// The placed module provides the route object (placed.go).
			as := modules.PlacedName(c.placed, name)
			spec.provides = []modules.Provided{{Type: typ, Name: as}}
			spec.provide = fx.Provide(fx.Annotate(newDocs, fx.ResultTags(`name:"`+as+`"`)))
		} else {
			// Unnamed and name:"<route>", as every backend's document route.
			spec.provides = []modules.Provided{{Type: typ}, {Type: typ, Name: name}}
			spec.provide = fx.Options(fx.Provide(newDocs), modules.AlsoNamed[*Documents[T]](name))
		}
		spec.placedProvide = func(module, route string, o modules.Offer, subs map[tenancy.Tier]string) fx.Option {
			return modules.ProvidePlaced(rules.Name, module, route, o, subs, true, func(p *modules.PlacedRoute[*Documents[T]]) *Documents[T] {
				return &Documents[T]{placed: p}
			})
		}
		c.routes = append(c.routes, spec)
	})
}

// Documents is a typed document store route. Stored documents hold _id
// (the id, tenant-prefixed when tenant-aware), tenant_id (when
// tenant-aware), id, v (the version) and doc (the value's JSON form).
type Documents[T any] struct {
	route route
	// placed: the route of a module with Placements, each call served by
	// the route of the tenant's placement.
	placed *modules.PlacedRoute[*Documents[T]]
}

// Get returns the record with id, or document.ErrNotFound.
func (d *Documents[T]) Get(ctx context.Context, id string) (document.Record[T], error) {
	if d.placed != nil {
		return modules.OnPlacement(d.placed, ctx, false, func(in *Documents[T]) (document.Record[T], error) { return in.Get(ctx, id) })
	}
	ctx, t, err := d.route.target(ctx)
	if err != nil {
		return document.Record[T]{}, err
	}
	defer t.release()
	raw, err := t.coll.FindOne(ctx, t.byID(id)).Raw()
	if errors.Is(err, driver.ErrNoDocuments) {
		return document.Record[T]{}, document.ErrNotFound
	}
	if err != nil {
		return document.Record[T]{}, d.wrap("get", err)
	}
	return decodeRecord[T](raw)
}

// Create stores v under id at version 1, or returns document.ErrExists.
func (d *Documents[T]) Create(ctx context.Context, id string, v T) (document.Version, error) {
	if d.placed != nil {
		return modules.OnPlacement(d.placed, ctx, true, func(in *Documents[T]) (document.Version, error) { return in.Create(ctx, id, v) })
	}
	ctx, t, body, err := d.write(ctx, v)
	if err != nil {
		return 0, err
	}
	defer t.release()
	doc := t.stamp(id, bson.E{Key: fieldID, Value: id}, bson.E{Key: fieldVersion, Value: int64(1)},
		bson.E{Key: fieldDoc, Value: body})
	if _, err := t.coll.InsertOne(ctx, doc); err != nil {
		if driver.IsDuplicateKeyError(err) {
			return 0, document.ErrExists
		}
		return 0, d.wrap("create", err)
	}
	return 1, nil
}

// Update replaces the value when the stored version is expected; it returns
// the new version, document.ErrConflict, or document.ErrNotFound.
func (d *Documents[T]) Update(ctx context.Context, id string, v T, expected document.Version) (document.Version, error) {
	if d.placed != nil {
		return modules.OnPlacement(d.placed, ctx, true, func(in *Documents[T]) (document.Version, error) { return in.Update(ctx, id, v, expected) })
	}
	ctx, t, body, err := d.write(ctx, v)
	if err != nil {
		return 0, err
	}
	defer t.release()
	next := int64(expected) + 1
	res, err := t.coll.UpdateOne(ctx,
		append(t.byID(id), bson.E{Key: fieldVersion, Value: int64(expected)}),
		bson.D{{Key: "$set", Value: bson.D{{Key: fieldDoc, Value: body}, {Key: fieldVersion, Value: next}}}})
	if err != nil {
		return 0, d.wrap("update", err)
	}
	if res.MatchedCount == 1 {
		return document.Version(next), nil
	}
	// Nothing matched: tell a stale version from a missing (or another
	// tenant's) record with the same tenant-filtered lookup.
	n, err := t.coll.CountDocuments(ctx, t.byID(id), options.Count().SetLimit(1))
	if err != nil {
		return 0, d.wrap("update", err)
	}
	if n == 0 {
		return 0, document.ErrNotFound
	}
	return 0, document.ErrConflict
}

// Delete removes the record, or returns document.ErrNotFound.
func (d *Documents[T]) Delete(ctx context.Context, id string) error {
	if d.placed != nil {
		_, err := modules.OnPlacement(d.placed, ctx, true, func(in *Documents[T]) (struct{}, error) { return struct{}{}, in.Delete(ctx, id) })
		return err
	}
	ctx, t, err := d.route.target(ctx)
	if err != nil {
		return err
	}
	defer t.release()
	res, err := t.coll.DeleteOne(ctx, t.byID(id))
	if err != nil {
		return d.wrap("delete", err)
	}
	if res.DeletedCount == 0 {
		return document.ErrNotFound
	}
	return nil
}

// List returns the records matching q, ordered and limited.
func (d *Documents[T]) List(ctx context.Context, q document.Query) ([]document.Record[T], error) {
	if d.placed != nil {
		return modules.OnPlacement(d.placed, ctx, false, func(in *Documents[T]) ([]document.Record[T], error) { return in.List(ctx, q) })
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	ctx, t, err := d.route.target(ctx)
	if err != nil {
		return nil, err
	}
	defer t.release()
	opts := options.Find().SetSort(querySort(q))
	if q.Limit > 0 {
		opts.SetLimit(int64(q.Limit))
	}
	cur, err := t.coll.Find(ctx, t.filter(queryFilter(q)...), opts)
	if err != nil {
		return nil, d.wrap("list", err)
	}
	defer cur.Close(ctx)
	var out []document.Record[T]
	for cur.Next(ctx) {
		rec, err := decodeRecord[T](cur.Current)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	if err := cur.Err(); err != nil {
		return nil, d.wrap("list", err)
	}
	return out, nil
}

// Count returns how many records match q (ordering and limit ignored). The
// driver runs it as an aggregation whose first stage is the $match built
// here, tenant predicate first.
func (d *Documents[T]) Count(ctx context.Context, q document.Query) (int, error) {
	if d.placed != nil {
		return modules.OnPlacement(d.placed, ctx, false, func(in *Documents[T]) (int, error) { return in.Count(ctx, q) })
	}
	if err := q.Validate(); err != nil {
		return 0, err
	}
	ctx, t, err := d.route.target(ctx)
	if err != nil {
		return 0, err
	}
	defer t.release()
	n, err := t.coll.CountDocuments(ctx, t.filter(queryFilter(q)...))
	if err != nil {
		return 0, d.wrap("count", err)
	}
	return int(n), nil
}

// write encodes v, then opens the route's target for a write of it: a
// value that cannot be stored takes no connection. The caller releases t.
func (d *Documents[T]) write(ctx context.Context, v T) (context.Context, target, any, error) {
	body, err := encodeValue(v)
	if err != nil {
		return ctx, target{}, nil, d.wrap("encode", err)
	}
	ctx, t, err := d.route.target(ctx)
	return ctx, t, body, err
}

func (d *Documents[T]) wrap(op string, err error) error {
	return fmt.Errorf("mongo: %s %s: %w", d.route.spec.name, op, err)
}

func decodeRecord[T any](raw bson.Raw) (document.Record[T], error) {
	var rec document.Record[T]
	id, ok := raw.Lookup(fieldID).StringValueOK()
	if !ok {
		return rec, errors.New("mongo: stored document has no string id")
	}
	v, ok := raw.Lookup(fieldVersion).AsInt64OK()
	if !ok {
		return rec, fmt.Errorf("mongo: stored document %q has no version", id)
	}
	val, err := decodeValue[T](raw.Lookup(fieldDoc))
	if err != nil {
		return rec, fmt.Errorf("mongo: document %q: %w", id, err)
	}
	return document.Record[T]{ID: id, Version: document.Version(v), Value: val}, nil
}

var _ document.Store[struct{}] = (*Documents[struct{}])(nil)
