package mongo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/tenancy"
)

// RawFilterRoute adds the raw filter hatch, provided as *RawFilter
// name:"<name>". It runs query documents the caller writes, which nothing
// can rewrite or verify, so the route declares origin raw: only a routed
// client (dedicated) clears its floor, and any weaker wiring is refused at
// fx.New with statement_origin_isolation_floor.
func RawFilterRoute(name string, cfg RouteConfig) Option {
	return namedRoute(name, kindRawFilter, cfg, func(r route) *RawFilter { return &RawFilter{route: r} })
}

// RawFilter runs user-written query documents on the tenant's own client.
type RawFilter struct{ route route }

// Find returns up to limit documents (0: no limit) matching filter, a
// query document in any form the driver accepts. On a tenant-aware route
// it is ANDed with the tenant predicate as defence in depth; the boundary
// is the dedicated client, not that predicate.
func (r *RawFilter) Find(ctx context.Context, filter any, limit int) ([]bson.Raw, error) {
	ctx, t, err := r.route.target(ctx)
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
// tenant-aware route. There a tenant field of the caller's own is dropped
// when it names the bound tenant and refused (foreign_tenant) otherwise:
// the stored document carries exactly one tenant field, the bound one.
func (r *RawFilter) Insert(ctx context.Context, doc bson.D) error {
	ctx, t, err := r.route.target(ctx)
	if err != nil {
		return err
	}
	defer t.release()
	if !t.tag.IsZero() {
		own := t.tag.String()
		rest := make(bson.D, 0, len(doc)+1)
		rest = append(rest, bson.E{Key: fieldTenant, Value: own})
		for _, e := range doc {
			if e.Key != fieldTenant {
				rest = append(rest, e)
			} else if v, ok := e.Value.(string); !ok || v != own {
				return r.foreign(fmt.Sprintf("the document sets %s to %v under tenant %s", fieldTenant, e.Value, own))
			}
		}
		doc = rest
	}
	if _, err := t.coll.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("mongo: %s insert: %w", r.route.spec.name, err)
	}
	return nil
}

// foreign refuses a write that names another tenant.
func (r *RawFilter) foreign(detail string) error {
	return &tenancy.Error{Code: tenancy.CodeForeignTenant, Module: r.route.core.module, Backend: rules.Name,
		Route: r.route.spec.name, Detail: detail, Fix: "leave " + fieldTenant + " out of the document: the route stamps the bound tenant"}
}
