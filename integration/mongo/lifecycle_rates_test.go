package mongo_test

import (
	"context"
	"strings"

	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/internal/lifebench"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioLifecycleRatesMongo: under `make bench` only, lifebench.Measure
// on FerretDB (SQLite, in the test process): 10,000 tenants with a
// collection each, some 8 minutes here (TENANTWIRE_LIFECYCLE_TENANTS sets
// another count); the database is read directly after offboarding for any
// collection left.
func TestRatioLifecycleRatesMongo(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	opts, db := plainDB(t)
	var r struct {
		fx.In
		Tenants *modules.Tenants
		Orders  *mongo.Documents[order]
	}
	start(t, modules.Lifecycle(), mongo.Module("m", append(opts, modules.AllowTeardown(),
		mongo.Document[order]("orders", mongo.RouteConfig{Collection: naming.PerTenant("orders")}))...), fx.Populate(&r))
	t.Cleanup(func() { _ = client(t, uriA).Database(db).Drop(context.Background()) })
	lifebench.Measure(t, lifebench.Backend{Name: "mongo-namespace", Tenants: r.Tenants,
		Write: func(ctx context.Context, key string) error {
			_, err := r.Orders.Create(ctx, key, order{Total: 1})
			return err
		},
		Left: func(ctx context.Context, ids []tenancy.ID) (int, error) {
			names, err := client(t, uriA).Database(db).ListCollectionNames(ctx, bson.D{})
			if err != nil {
				return 0, err
			}
			return present(ids, names), nil
		}}, lifebench.Tenants(t, 10_000))
}

// present counts the ids with a collection among names.
func present(ids []tenancy.ID, names []string) int {
	n := 0
	for _, id := range ids {
		for _, name := range names {
			if strings.Contains(name, id.Hex()) {
				n++
				break
			}
		}
	}
	return n
}
