package mongo_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// itemOf2 is item for the second module: an app has one document route
// per value type.
type itemOf2 item

// TestRoutedClaimAcrossModules: two routed modules whose resolvers put
// tenant A (through m1) and tenant B (through m2) in one database, their
// routes on the same collection. The claim on a database is the
// process's, not a module's: B is refused with dedicated_target_shared
// naming m2, on every call, and neither reads nor writes A's documents.
func TestRoutedClaimAcrossModules(t *testing.T) {
	db := freshName()
	only := func(id tenancy.ID) routing.Resolver {
		return func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
			if tn != id {
				return routing.Credentials{}, errors.New("no database for this tenant")
			}
			return routing.Credentials{Endpoint: uriA}, nil
		}
	}
	items := mongo.RouteConfig{Collection: naming.Shared("items")}
	var d struct {
		fx.In
		D1 *mongo.Documents[item]
		D2 *mongo.Documents[itemOf2]
	}
	start(t,
		mongo.Module("m1", mongo.Database(db), mongo.Routed(only(tenancytest.TenantA), mongo.RoutedConfig{}), modules.RequiredIsolation(tenancy.Dedicated),
			mongo.Document[item]("items1", items)),
		mongo.Module("m2", mongo.Database(db), mongo.Routed(only(tenancytest.TenantB), mongo.RoutedConfig{}), modules.RequiredIsolation(tenancy.Dedicated),
			mongo.Document[itemOf2]("items2", items)),
		fx.Populate(&d))
	ctxA, ctxB := ctxOf(tenancytest.TenantA), ctxOf(tenancytest.TenantB)
	if _, err := d.D1.Create(ctxA, "p1", item{"secret", 1}); err != nil {
		t.Fatal(err)
	}
	refused := func(op string, err error) {
		t.Helper()
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared || te.Module != "m2" || te.Backend != "mongodb" || te.Route != "items2" {
			t.Fatalf("B's %s through m2 on A's database: %v", op, err)
		}
	}
	_, err := d.D2.Get(ctxB, "p1")
	refused("get", err)
	_, err = d.D2.Count(ctxB, document.Query{})
	refused("count", err)
	refused("delete", d.D2.Delete(ctxB, "p1"))
	_, err = d.D2.Create(ctxB, "p2", itemOf2{"b", 2})
	refused("create", err)
	// Counted in the database itself, not through either module.
	n, err := client(t, uriA).Database(db).Collection("items").CountDocuments(context.Background(), map[string]any{})
	if err != nil || n != 1 {
		t.Fatalf("the database holds %d documents (%v), want A's one", n, err)
	}
	if r, err := d.D1.Get(ctxA, "p1"); err != nil || r.Value.Name != "secret" {
		t.Fatalf("A's document after B's attempts: %+v, %v", r, err)
	}
}
