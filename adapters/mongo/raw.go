package mongo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// RawFilterRoute adds the raw filter hatch, provided as *RawFilter
// name:"<name>". It runs query documents the caller writes, which nothing
// can rewrite or verify, so the route declares origin raw: only a routed
// client (dedicated) clears its floor, and any weaker wiring is refused at
// fx.New with statement_origin_isolation_floor.
func RawFilterRoute(name string, cfg Config) Option {
	return namedRoute(name, KindRawFilter, cfg, func(r route) *RawFilter { return &RawFilter{route: r} })
}

// RawFilter runs user-written query documents on the tenant's own client.
type RawFilter struct{ route route }

// Find returns up to limit documents (0: no limit) matching filter, a
// query document in any form the driver accepts. On a tenant-aware route
// it is ANDed with the tenant predicate as defence in depth; the boundary
// is the dedicated client, not that predicate.
func (r *RawFilter) Find(ctx context.Context, filter any, limit int) ([]bson.Raw, error) {
	t, err := r.route.target(ctx)
	if err != nil {
		return nil, err
	}
	defer t.release()
	if !t.tag.IsZero() {
		filter = bson.D{{Key: "$and", Value: bson.A{t.filter(), filter}}}
	}
	opts := options.Find()
	if limit > 0 {
		opts.SetLimit(int64(limit))
	}
	cur, err := t.coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("mongo: %s find: %w", r.route.spec.name, err)
	}
	defer cur.Close(ctx)
	var out []bson.Raw
	for cur.Next(ctx) {
		out = append(out, append(bson.Raw(nil), cur.Current...))
	}
	return out, cur.Err()
}

// Insert stores a document as given, stamped with the tenant on a
// tenant-aware route.
func (r *RawFilter) Insert(ctx context.Context, doc bson.D) error {
	t, err := r.route.target(ctx)
	if err != nil {
		return err
	}
	defer t.release()
	if !t.tag.IsZero() {
		doc = append(bson.D{{Key: fieldTenant, Value: t.tag.String()}}, doc...)
	}
	if _, err := t.coll.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("mongo: %s insert: %w", r.route.spec.name, err)
	}
	return nil
}
