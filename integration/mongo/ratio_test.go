package mongo_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRatioFindByID is QUALITY P6: a tagged find-by-id through the adapter
// against the same lookup written by hand with the raw driver (same
// filter, same client, same server), interleaved, median of 7 rounds.
// internal/ratio belongs to the root module, so the measurement is inline.
func TestRatioFindByID(t *testing.T) {
	if os.Getenv("TENANTWIRE_BENCH") != "1" {
		t.Skip("ratio benchmark: run with `make bench` (TENANTWIRE_BENCH=1)")
	}
	opts, db := plainDB(t)
	var docs *mongo.Documents[item]
	start(t, mongo.Module("m", append(opts,
		mongo.Document[item]("items", mongo.Config{TenantAware: true, Collection: mongo.Static("items")}))...),
		fx.Populate(&docs))
	ctx := ctxOf(tenancytest.TenantA)
	for i := range 100 {
		if _, err := docs.Create(ctx, fmt.Sprint("k", i), item{Name: fmt.Sprint("n", i), N: i}); err != nil {
			t.Fatal(err)
		}
	}
	coll := client(t, uriA).Database(db).Collection("items")
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
			var row struct {
				ID  string `bson:"id"`
				V   int64  `bson:"v"`
				Doc item   `bson:"doc"`
			}
			err := coll.FindOne(context.Background(),
				bson.D{{Key: "tenant_id", Value: tenant}, {Key: "_id", Value: prefix + fmt.Sprint("k", i%100)}}).Decode(&row)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	const rounds, iters = 7, 300
	ours(iters / 10)
	baseline(iters / 10)
	var ratios []float64
	for r := range rounds {
		var o, b time.Duration
		if r%2 == 0 {
			o, b = timed(ours, iters), timed(baseline, iters)
		} else {
			b, o = timed(baseline, iters), timed(ours, iters)
		}
		ratios = append(ratios, float64(o)/float64(b))
	}
	sorted := slices.Clone(ratios)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	fmt.Printf("ratio P6-mongo-find-by-id %.2f\n", median)
	t.Logf("P6 mongo find-by-id: median %.3f over %d rounds %v (target <= 1.05)", median, rounds, ratios)
}

func timed(f func(int), n int) time.Duration {
	start := time.Now()
	f(n)
	return time.Since(start)
}
