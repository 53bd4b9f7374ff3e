package mongo

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

var tenantB = tenancy.MustParseID("0b0b0b0b-0000-4000-8000-00000000000b")

// testRoute is a document route on a client that never dials (the driver
// connects lazily and nothing here sends a command).
func testRoute(t *testing.T, cfg RouteConfig) *route {
	t.Helper()
	c, err := driver.Connect(options.Client().ApplyURI("mongodb://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	r := newRoute(&core{module: "m", db: "app", client: c}, &routeSpec{name: "items", kind: kindDocument, cfg: cfg, coll: collectionOf(cfg)})
	return &r
}

// leastAllocs is the fewest allocations f made per run over a few trials:
// the count covers every goroutine, so one trial can catch the runtime's.
func leastAllocs(f func()) float64 {
	least := testing.AllocsPerRun(50, f)
	for range 4 {
		least = min(least, testing.AllocsPerRun(50, f))
	}
	return least
}

// The read path's own allocations, the part of Documents.Get a
// hand-written lookup does not share. The limits are today's counts: the
// driver's extended JSON writer cost 31 allocations per record and a
// database handle per call 9, which a change here must not bring back.
func TestReadPathAllocations(t *testing.T) {
	body, err := encodeValue(struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}{"bench", 7})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bson.Marshal(bson.D{{Key: "_id", Value: "k"}, {Key: fieldID, Value: "k"},
		{Key: fieldVersion, Value: int64(1)}, {Key: fieldDoc, Value: body}})
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	if n := leastAllocs(func() {
		if rec, err := decodeRecord[item](raw); err != nil || rec.Value.N != 7 {
			t.Fatal(rec, err)
		}
	}); n > 7 {
		t.Errorf("decoding a record: %v allocations, want at most 7", n)
	}

	ctx := tenancy.WithTenant(context.Background(), tenantA)
	for _, c := range []struct {
		name string
		cfg  RouteConfig
		max  float64
	}{
		// A tenant-aware shared collection: one handle for every call.
		{"tagged", RouteConfig{TenantAware: true, Collection: naming.Shared("items")}, 0},
		// A collection per tenant: its name and collection handle, made
		// per call as a hand-written lookup makes them.
		{"per-tenant collection", RouteConfig{Collection: naming.PerTenant("items")}, 10},
	} {
		r := testRoute(t, c.cfg)
		if n := leastAllocs(func() {
			if _, _, err := r.target(ctx); err != nil {
				t.Fatal(err)
			}
		}); n > c.max {
			t.Errorf("%s: resolving a call's collection: %v allocations, want at most %v", c.name, n, c.max)
		}
	}
}

// Handles made once are the ones no tenant names: a per-tenant collection
// or database is still resolved per call from the call's tenant.
func TestHandlesFollowTheTenant(t *testing.T) {
	at := func(r *route, id tenancy.ID) *driver.Collection {
		t.Helper()
		_, tg, err := r.target(tenancy.WithTenant(context.Background(), id))
		if err != nil {
			t.Fatal(err)
		}
		return tg.coll
	}
	perColl := testRoute(t, RouteConfig{Collection: naming.PerTenant("items")})
	for _, id := range []tenancy.ID{tenantA, tenantB, tenantA} {
		if c := at(perColl, id); c.Name() != CollectionName("items", id) || c.Database().Name() != "app" {
			t.Fatalf("tenant %s reads %s.%s", id, c.Database().Name(), c.Name())
		}
	}
	perDB := testRoute(t, RouteConfig{Collection: naming.Shared("items"), Database: naming.PerTenant("t")})
	for _, id := range []tenancy.ID{tenantA, tenantB, tenantA} {
		if c := at(perDB, id); c.Name() != "items" || c.Database().Name() != DatabaseName("t", id) {
			t.Fatalf("tenant %s reads %s.%s", id, c.Database().Name(), c.Name())
		}
	}
	tagged := testRoute(t, RouteConfig{TenantAware: true, Collection: naming.Shared("items")})
	if a, b := at(tagged, tenantA), at(tagged, tenantB); a != b || a.Name() != "items" {
		t.Fatalf("a shared collection resolved to %s and %s", a.Name(), b.Name())
	}
	if _, _, err := tagged.target(context.Background()); err == nil {
		t.Fatal("no tenant bound, yet a collection was resolved")
	}
}
