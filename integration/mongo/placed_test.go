package mongo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type placedMongo struct {
	fx.In
	Tenants *modules.Tenants
	Orders  *mongo.Documents[order]
	Hits    *mongo.Counter `name:"hits"`
}

// placedMongoApp is an app of one module offering all three placements:
// A at the default (tagged, the shared collection on the first server), B
// placed at namespace (its own collection there), C at dedicated (a
// database of its own on the second server), C's plan requiring it.
func placedMongoApp(t *testing.T) (placedMongo, string, func(tenancy.ID) string) {
	t.Helper()
	db := freshName()
	dedicated := func(id tenancy.ID) string { return db + "_d" + id.Hex()[24:] }
	a, b, c := tenancytest.TenantA, tenancytest.TenantB, tenancytest.TenantC
	rawA, rawB := client(t, uriA), client(t, uriB)
	t.Cleanup(func() {
		_ = rawA.Database(db).Drop(context.Background())
		for _, id := range []tenancy.ID{a, b, c} {
			_ = rawB.Database(dedicated(id)).Drop(context.Background())
		}
	})
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: uriB, Params: map[string]string{"database": dedicated(id)}}, nil
	}
	var r placedMongo
	start(t, modules.Lifecycle(), mongo.Module("orders", mongo.Connect(uriA), mongo.Database(db),
		mongo.Routed(resolve, mongo.RoutedConfig{}), modules.AllowTeardown(),
		modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}),
		mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("ord")}),
		mongo.CounterRoute("hits", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("hits")})),
		fx.Populate(&r))
	r.Tenants.Place(b, "orders", tenancy.Namespace)
	r.Tenants.Place(c, "orders", tenancy.Dedicated)
	r.Tenants.SetPlan(c, tenancy.Dedicated)
	for _, id := range []tenancy.ID{a, b, c} {
		if _, err := r.Tenants.Provision(context.Background(), id); err != nil {
			t.Fatalf("provisioning %s: %v", id, err)
		}
	}
	return r, db, dedicated
}

// TestPlacementsMongo, on FerretDB: one module serves a tagged, a
// namespace and a dedicated tenant at once; the boundary probes pass
// between every pair both ways; each tenant's documents are where its
// placement says, read on the servers; and tenant A, with 43 orders and
// a counter, moves tagged → namespace → dedicated → tagged, reading all
// of it after each move, each old copy cleaned up and verified empty, B
// and C untouched; a plan above A's placement then refuses its reads.
func TestPlacementsMongo(t *testing.T) {
	r, db, dedicated := placedMongoApp(t)
	a, b, c := tenancytest.TenantA, tenancytest.TenantB, tenancytest.TenantC
	for _, pair := range [][2]tenancy.ID{{a, b}, {b, a}, {b, c}, {c, b}, {a, c}, {c, a}} {
		id := "probe-" + pair[0].Hex()[:2] + pair[1].Hex()[:2]
		tenancytest.Boundary(t, tenancytest.Probe{A: pair[0], B: pair[1], RecordID: id,
			Write: func(ctx context.Context) error { _, err := r.Orders.Create(ctx, id, order{Total: 1}); return err },
			Read: func(ctx context.Context) (bool, error) {
				_, err := r.Orders.Get(ctx, id)
				if errors.Is(err, document.ErrNotFound) {
					return false, nil
				}
				return err == nil, err
			},
			List: func(ctx context.Context) ([]string, error) {
				recs, err := r.Orders.List(ctx, document.Query{})
				var ids []string
				for _, rec := range recs {
					ids = append(ids, rec.ID)
				}
				return ids, err
			},
			Cleanup: func(ctx context.Context) error { return r.Orders.Delete(ctx, id) },
		})
	}
	rawA, rawB := client(t, uriA), client(t, uriB)
	ctx := context.Background()
	count := func(n int64, err error) int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, id := range []tenancy.ID{a, b, c} {
		if _, err := r.Orders.Create(tenancy.WithTenant(ctx, id), "own", order{Total: 7}); err != nil {
			t.Fatal(err)
		}
	}
	// Each of A and B holds its order and the probe records it wrote.
	if n := count(rawA.Database(db).Collection("ord").CountDocuments(ctx, bson.D{{Key: "tenant_id", Value: a.String()}})); n != 3 {
		t.Errorf("A's orders in the shared collection: %d, want 3", n)
	}
	if n := count(rawA.Database(db).Collection(mongo.CollectionName("ord", b)).CountDocuments(ctx, bson.D{})); n != 3 {
		t.Errorf("B's orders in its own collection: %d, want 3", n)
	}
	if n := count(rawA.Database(db).Collection("ord").CountDocuments(ctx, bson.D{{Key: "tenant_id", Value: c.String()}})); n != 0 {
		t.Errorf("C's orders on the shared server: %d, want 0", n)
	}
	names, err := rawB.Database(dedicated(c)).ListCollectionNames(ctx, bson.D{})
	if err != nil || len(names) == 0 {
		t.Fatalf("C's own database holds no collection: %v %v", names, err)
	}

	ctxA := tenancy.WithTenant(ctx, a)
	for i := range 40 {
		if _, err := r.Orders.Create(ctxA, fmt.Sprint("o-", i), order{Total: i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Hits.Add(ctxA, "views", 9); err != nil {
		t.Fatal(err)
	}
	tenancytest.CheckMoveAround(t, tenancytest.MoveAround{Tenants: r.Tenants, Tenant: a, Module: "orders",
		After: func(from, to tenancy.Tier, rep modules.MoveReport) {
			if rep.Records != 44 { // 43 orders and the counter
				t.Errorf("moved %s → %s: %d records, want A's 43 orders and its counter", from, to, rep.Records)
			}
			if n, err := r.Orders.Count(ctxA, document.Query{}); err != nil || n != 43 {
				t.Fatalf("after the move to %s A counts %d orders (%v), want 43", to, n, err)
			}
			if v, err := r.Hits.Get(ctxA, "views"); err != nil || v != 9 {
				t.Fatalf("after the move to %s A's counter is %d (%v), want 9", to, v, err)
			}
			if _, err := r.Orders.Create(ctxA, "after-"+to.String(), order{Total: 1}); err != nil {
				t.Fatalf("a write after the move to %s: %v", to, err)
			}
			if err := r.Orders.Delete(ctxA, "after-"+to.String()); err != nil {
				t.Fatal(err)
			}
		},
		// B and C are untouched by each cleanup.
		Cleaned: func(_, to tenancy.Tier, _ time.Duration) {
			for _, id := range []tenancy.ID{b, c} {
				if rec, err := r.Orders.Get(tenancy.WithTenant(ctx, id), "own"); err != nil || rec.Value.Total != 7 {
					t.Fatalf("%s's order after A's move to %s and the cleanup: %+v %v", id, to, rec, err)
				}
			}
		}})
	if n := count(rawA.Database(db).Collection(mongo.CollectionName("ord", a)).CountDocuments(ctx, bson.D{})); n != 0 {
		t.Errorf("A's namespace copy after its cleanup: %d documents", n)
	}
	if n := count(rawA.Database(db).Collection("ord").CountDocuments(ctx, bson.D{{Key: "tenant_id", Value: a.String()}})); n != 43 {
		t.Errorf("A's orders back in the shared collection: %d, want 43", n)
	}
	// A plan above the placement: A is served nothing from the shared
	// collection, reads included, and cannot be moved below its plan.
	r.Tenants.SetPlan(a, tenancy.Dedicated)
	if _, err := r.Orders.Get(ctxA, "o-1"); tenancy.CodeOf(err) != tenancy.CodeTenantPlacementUnderFloor {
		t.Errorf("a read of A, placed tagged under a dedicated plan: %v, want tenant_placement_under_floor", err)
	}
	if _, err := r.Tenants.Move(ctx, a, "orders", tenancy.Namespace, modules.MoveOptions{}); tenancy.CodeOf(err) != tenancy.CodeTenantPlacementUnderFloor {
		t.Errorf("a move of A under its plan: %v, want tenant_placement_under_floor", err)
	}
	r.Tenants.SetPlan(a, tenancy.None) // the probes' cleanup removes A's records
}
