package mongo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioScaleMongoProvision: under `make bench` only, ProvisionAll of
// 1,000 tenants (a collection per tenant with its index) on FerretDB,
// concurrency 8; prints "scale provision-mongo-namespace tenants=1000
// per_sec=X". The database is dropped afterwards.
func TestRatioScaleMongoProvision(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	const n = 1000
	opts, db := plainDB(t)
	var prov *mongo.Provisioner
	start(t, mongo.Module("m", append(opts,
		mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("orders")}), modules.TenantRegistry(migrate.NewMemoryRegistry()))...),
		named("m", &prov))
	t.Cleanup(func() { _ = client(t, uriA).Database(db).Drop(context.Background()) })
	ids := make([]tenancy.ID, n)
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-d000-%012x", i+1))
	}
	rep, err := prov.ProvisionAll(context.Background(), ids, migrate.Options{Concurrency: 8})
	if err != nil || rep.Done != n {
		t.Fatalf("provisioned %d of %d: %v", rep.Done, n, rep.Failures[:min(3, len(rep.Failures))])
	}
	fmt.Printf("scale provision-mongo-namespace tenants=%d per_sec=%.0f\n", n, rep.PerSecond())
}
