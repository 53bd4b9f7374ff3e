package mongo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/tenancy"
)

// ensureCurrent refuses a call for tenant when its history is behind the
// required version, remembered by t's server (its routed client target):
// the version gate of the route's entry. A route that needs no tenant has
// nothing to check.
func (r *route) ensureCurrent(ctx context.Context, tenant tenancy.ID, t target) error {
	if tenant.IsZero() {
		return nil
	}
	return r.core.gate.CheckTenant(ctx, tenant, t.server, r.spec.name,
		func(ctx context.Context) (int64, error) { return r.core.appliedVersion(ctx, tenant) },
		func(ctx context.Context) (string, error) { return r.core.missing(ctx, tenant) })
}

// missing names the home route's collection when it is the tenant's own
// (a collection or database per tenant, or the tenant's routed server)
// and does not exist. A home collection all tenants share proves nothing
// about one tenant.
func (c *core) missing(ctx context.Context, tenant tenancy.ID) (string, error) {
	hr := newRoute(c, c.home(c.routes))
	if !hr.perTenant && c.pools == nil {
		return "", nil
	}
	t, err := hr.targetFor(ctx, tenant)
	if err != nil {
		return "", err
	}
	defer t.release()
	names, err := t.coll.Database().ListCollectionNames(ctx, bson.D{{Key: "name", Value: t.coll.Name()}})
	if err != nil {
		return "", fmt.Errorf("mongo: module %s: looking for tenant %s's collection: %w", c.module, tenant, err)
	}
	if len(names) > 0 {
		return "", nil
	}
	return "collection " + t.coll.Name() + " in database " + t.coll.Database().Name(), nil
}

// appliedVersion is the newest version tenant's records mark applied (0
// when none).
func (c *core) appliedVersion(ctx context.Context, tenant tenancy.ID) (int64, error) {
	hr := newRoute(c, c.home(c.routes))
	t, err := hr.targetFor(ctx, tenant)
	if err != nil {
		return 0, fmt.Errorf("mongo: module %s: reading tenant %s's migration records: %w", c.module, tenant, err)
	}
	defer t.release()
	var rec stepRecord
	err = t.coll.Database().Collection(migrationColl).FindOne(ctx,
		bson.D{{Key: "module", Value: c.module}, {Key: "tenant", Value: tenant.Hex()}, {Key: "state", Value: "applied"}},
		options.FindOne().SetSort(bson.D{{Key: "version", Value: -1}})).Decode(&rec)
	if err == driver.ErrNoDocuments {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("mongo: module %s: reading tenant %s's migration records: %w", c.module, tenant, err)
	}
	return rec.Version, nil
}
