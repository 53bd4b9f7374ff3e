package mongo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A routed module disconnects every tenant's client on stop, so no goroutine
// is left running.
// Other tests' clients predate the check.
func TestRoutedStopLeavesNoGoroutine(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	var docs *mongo.Documents[item]
	app := fx.New(fx.NopLogger, mongo.Module("m", append(dedicated(t),
		mongo.Document[item]("items", mongo.RouteConfig{Collection: naming.Shared("items")}))...), fx.Populate(&docs))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
		if _, err := docs.Create(ctxOf(id), "x", item{Name: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// FerretDB (in this process) opens a SQLite pool per new database;
	// those openers are the server's, and the adapter uses no database/sql.
	goleak.VerifyNone(t, opt, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

// The routed provisioner creates a tenant's collections on that tenant's
// own server only.
func TestRoutedProvisionLandsOnTheTenantsServer(t *testing.T) {
	if realMongo {
		t.Skip("one server: covered by the per-tenant database of the routed credentials")
	}
	coll := "events_" + freshName()
	var prov *mongo.Provisioner
	start(t, mongo.Module("m", append(dedicated(t),
		mongo.OutboxRoute("events", mongo.RouteConfig{Collection: naming.Shared(coll)}))...), named("m", &prov))
	if err := prov.Provision(context.Background(), tenancytest.TenantA); err != nil {
		t.Fatal(err)
	}
	has := func(uri string) bool {
		dbs, err := client(t, uri).ListDatabaseNames(context.Background(), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		for _, db := range dbs {
			names, err := client(t, uri).Database(db).ListCollectionNames(context.Background(), bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(names, coll) {
				return true
			}
		}
		return false
	}
	if !has(uriA) || has(uriB) {
		t.Fatalf("provisioned on A: %v, on B: %v", has(uriA), has(uriB))
	}
}

// Parity: the same operations give the same results with tenancy off
// and with tenancy on and only the default tenant bound.
func TestParityWithTenancyOff(t *testing.T) {
	run := func(cfg mongo.RouteConfig, ctx context.Context) string {
		var docs *mongo.Documents[item]
		start(t, mongo.Module("m", append(plain(t), mongo.Document[item]("items", cfg))...), fx.Populate(&docs))
		var out []string
		log := func(v ...any) { out = append(out, fmt.Sprint(v...)) }
		for i, name := range []string{"b", "a", "c"} {
			v, err := docs.Create(ctx, name, item{Name: name, N: i})
			log(v, err)
		}
		_, err := docs.Create(ctx, "a", item{})
		log(errors.Is(err, document.ErrExists))
		v, err := docs.Update(ctx, "a", item{Name: "a", N: 7}, 1)
		log(v, err)
		_, err = docs.Update(ctx, "a", item{}, 1)
		log(errors.Is(err, document.ErrConflict))
		recs, err := docs.List(ctx, document.Query{OrderBy: "n", Desc: true})
		log(recs, err)
		n, err := docs.Count(ctx, document.Query{Filters: []document.Filter{{Field: "n", Op: document.Lt, Value: 5}}})
		log(n, err)
		log(docs.Delete(ctx, "b"), errors.Is(docs.Delete(ctx, "b"), document.ErrNotFound))
		return fmt.Sprint(out)
	}
	off := run(mongo.RouteConfig{Collection: naming.Shared("items")}, context.Background())
	on := run(mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")}, tenancy.WithTenant(context.Background(), tenancy.Default))
	if off != on {
		t.Fatalf("tenancy off:\n%s\ntenancy on, default tenant:\n%s", off, on)
	}
}

// The text-index search mode needs MongoDB's $text; FerretDB 1.x has none.
func TestTextIndexSearch(t *testing.T) {
	if !realMongo {
		t.Skip("FerretDB 1.x has no text index: set MONGODB_URI to run the TextIndex mode")
	}
	var s *mongo.Search
	var prov *mongo.Provisioner
	start(t, mongo.Module("m", append(plain(t),
		mongo.SearchRoute("find", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("find"), TextIndex: true}))...),
		named("find", &s), named("m", &prov))
	if err := prov.Provision(context.Background(), tenancytest.TenantA); err != nil {
		t.Fatal(err)
	}
	tenancytest.Boundary(t, tenancytest.Probe{
		Write: func(ctx context.Context) error { return s.Put(ctx, "p1", "red apple") },
		Read: func(ctx context.Context) (bool, error) {
			n, err := s.Count(ctx, "apple")
			return n > 0, err
		},
	})
}

// Evict makes a tenant's next call resolve its credentials again.
func TestRoutedEvict(t *testing.T) {
	resolved := map[tenancy.ID]int{}
	var mu sync.Mutex
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		mu.Lock()
		defer mu.Unlock()
		resolved[id]++
		return routing.Credentials{Endpoint: uriA}, nil
	}
	var docs *mongo.Documents[item]
	var prov *mongo.Provisioner
	start(t, mongo.Module("m", mongo.Database(freshName()), mongo.Routed(resolve, mongo.RoutedConfig{}),
		mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")})),
		fx.Populate(&docs), named("m", &prov))
	ctx := ctxOf(tenancytest.TenantA)
	for range 3 {
		if _, err := docs.Get(ctx, "x"); !errors.Is(err, document.ErrNotFound) {
			t.Fatal(err)
		}
	}
	prov.Evict(tenancytest.TenantA)
	if _, err := docs.Get(ctx, "x"); !errors.Is(err, document.ErrNotFound) {
		t.Fatal(err)
	}
	if resolved[tenancytest.TenantA] != 2 {
		t.Fatalf("resolved %d times, want 2 (once, then once after Evict)", resolved[tenancytest.TenantA])
	}
}
