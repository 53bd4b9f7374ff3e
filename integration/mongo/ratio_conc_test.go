package mongo_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// concTenants are the tenant counts of the concurrency pairs: 1 and
// TENANTWIRE_CONC_MONGO_TENANTS (default 1,000), each tenant a collection
// of its own on the in-process FerretDB. Not 10,000: FerretDB's SQLite
// backend slows with every collection it holds, and had made 3,984 after
// 12 minutes here, 4 a second and falling (docs/performance.md).
func concTenants(t *testing.T) []int {
	n := 1000
	if s := os.Getenv("TENANTWIRE_CONC_MONGO_TENANTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("TENANTWIRE_CONC_MONGO_TENANTS=%q: want a positive number", s)
		}
	}
	return []int{1, n}
}

// TestRatioConcFindPerTenantCollection: C<tenants>, a find by id from G
// goroutines (64, and 8 as "-g8") over per-tenant collections vs the same
// lookup by hand with the raw driver (the collection named per call from
// the tenant, the same find, the reply decoded with bson.Unmarshal), on
// the route's client, so on the same connection pool (the driver's
// default, 100).
func TestRatioConcFindPerTenantCollection(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	for _, tenants := range concTenants(t) {
		t.Run(strconv.Itoa(tenants), func(t *testing.T) {
			c, db := client(t, uriA), freshName()
			var docs *mongo.Documents[item]
			start(t, mongo.Module("m", mongo.Use(c), mongo.Database(db),
				mongo.Document[item]("items", mongo.RouteConfig{Collection: naming.PerTenant("items")})),
				fx.Populate(&docs))
			ctxs := make([]context.Context, tenants)
			for i := range ctxs {
				ctxs[i] = ctxOf(tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1)))
			}
			began := time.Now()
			if err := ratio.Parallel(8, tenants, func(i int) error {
				_, err := docs.Create(ctxs[i], "k", item{Name: "bench", N: i})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			t.Logf("created %d per-tenant collections in %v", tenants, time.Since(began).Round(time.Millisecond))
			database := c.Database(db)
			ours := func(i int) error {
				_, err := docs.Get(ctxs[i], "k")
				return err
			}
			hand := func(i int) error {
				tn, _ := tenancy.Require(ctxs[i])
				_, err := handFind(database.Collection("items."+tn.Hex()), bson.D{{Key: "_id", Value: "k"}})
				return err
			}
			for i := range tenants {
				if err := ours(i); err != nil {
					t.Fatal(err)
				}
				if err := hand(i); err != nil {
					t.Fatal(err)
				}
			}
			for _, g := range []int{64, 8} {
				name := "mongo-per-tenant-collection-find"
				if g != 64 {
					name += "-g" + strconv.Itoa(g)
				}
				t.Run("g"+strconv.Itoa(g), func(t *testing.T) {
					ratio.ReportParallel(t, ratio.Pair{Label: "C" + strconv.Itoa(tenants), Name: name, Iterations: 500, Rounds: 11, Cap: 30 * time.Second,
						Ours: ratio.ParallelSide(t, g, tenants, ours), Baseline: ratio.ParallelSide(t, g, tenants, hand)}, 1.05, 2500)
				})
			}
		})
	}
}
