package mongo_test

import (
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestArchiveRoundTripMongoRouted, on FerretDB: a routed (dedicated)
// tenant's documents, in collections of its own database, a tenant-aware
// route's among them, are all in its archive and come back under C in
// C's database; B's database is untouched.
func TestArchiveRoundTripMongoRouted(t *testing.T) {
	db := freshName()
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	dbOf := func(id tenancy.ID) string { return db + "_" + id.Hex()[24:] }
	raw := client(t, uriA)
	t.Cleanup(func() {
		for _, id := range []tenancy.ID{a, b, c} {
			_ = raw.Database(dbOf(id)).Drop(context.Background())
		}
	})
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: uriA, Params: map[string]string{"database": dbOf(id)}}, nil
	}
	var r archiveMongo
	start(t, modules.Lifecycle(), mongo.Module("m", mongo.Routed(resolve, mongo.RoutedConfig{}), mongo.Database(db),
		modules.RequiredIsolation(tenancy.Dedicated), modules.AllowTeardown(),
		mongo.Document[order]("orders", mongo.RouteConfig{Collection: naming.Shared("orders")}),
		mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")})),
		fx.Populate(&r))
	writeMongo(t, r, a, b)
	if _, err := r.Tenants.Provision(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	tenancytest.CheckRoundTrip(t, tenancytest.RoundTrip{Tenants: r.Tenants, A: a, B: b, C: c,
		Read: r.read})
}
