package mongo_test

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRatioFindByID is the P6 pair: a tagged find-by-id through the adapter
// against the same lookup written by hand with the raw driver (the same
// client, the same find command, the envelope decoded with
// bson.Unmarshal), interleaved, median of 7 rounds.
func TestRatioFindByID(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	c, db := client(t, uriA), freshName()
	var docs *mongo.Documents[item]
	start(t, mongo.Module("m", mongo.Use(c), mongo.Database(db),
		mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")})),
		fx.Populate(&docs))
	ctx := ctxOf(tenancytest.TenantA)
	for i := range 100 {
		if _, err := docs.Create(ctx, fmt.Sprint("k", i), item{Name: fmt.Sprint("n", i), N: i}); err != nil {
			t.Fatal(err)
		}
	}
	coll := c.Database(db).Collection("items")
	tenant, prefix := tenancytest.TenantA.String(), tenancytest.TenantA.Hex()+":"

	ours := func(n int) {
		for i := range n {
			if _, err := docs.Get(ctx, fmt.Sprint("k", i%100)); err != nil {
				t.Fatal(err)
			}
		}
	}
	baseline := func(n int) {
		for i := range n {
			_, err := handFind(coll, bson.D{{Key: "tenant_id", Value: tenant}, {Key: "_id", Value: prefix + fmt.Sprint("k", i%100)}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	ratio.Report(t, ratio.Pair{Label: "P6", Name: "mongo-find-by-id", Ours: ours, Baseline: baseline, Rounds: 7, Iterations: 300}, 1.05)
}
