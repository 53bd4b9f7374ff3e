package mongo_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestOffboardVerifiesRoutedErasure, on FerretDB: a routed (dedicated)
// tenant with data in every route kind, a tagged route in its own
// database, a database-per-tenant route on its server and its migration
// records is offboarded: the verifier checks each route's collection, the
// per-tenant database, the migration records and the tenant's database as
// a whole, finds nothing, and the tenant's database holds nothing after;
// B, on the same server in a database of its own, keeps everything. A
// document planted after the teardown in a route's collection, and then a
// collection no route declares, each fail Offboard with
// tenant_erasure_incomplete and leave the tenant suspended. A verifier
// whose server cannot be reached fails; it never reports nothing found.
func TestOffboardVerifiesRoutedErasure(t *testing.T) {
	db, prefix := freshName(), freshName()
	a := tenancy.MustParseID("0ffd0000-0000-4000-8000-00000000000a")
	b := tenancy.MustParseID("0ffd0000-0000-4000-8000-00000000000b")
	c := tenancy.MustParseID("0ffd0000-0000-4000-8000-00000000000c")
	dbOf := func(id tenancy.ID) string { return db + "_" + id.Hex()[24:] }
	unreachable := false
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		c := routing.Credentials{Endpoint: uriA, Params: map[string]string{"database": dbOf(id)}}
		if unreachable {
			c.Endpoint = "mongodb://127.0.0.1:1"
		}
		return c, nil
	}
	raw := client(t, uriA)
	t.Cleanup(func() {
		for _, id := range []tenancy.ID{a, b, c} {
			_ = raw.Database(dbOf(id)).Drop(context.Background())
			_ = raw.Database(mongo.DatabaseName(prefix, id)).Drop(context.Background())
		}
	})
	type planter struct{}
	var plant func(ctx context.Context, id tenancy.ID) error
	var r struct {
		fx.In
		Tenants *modules.Tenants
		Prov    *mongo.Provisioner `name:"m"`
		Items   *mongo.Documents[item]
		Orders  *mongo.Documents[order]
		Notes   *mongo.Documents[note]
		Find    *mongo.Search    `name:"find"`
		Hits    *mongo.Counter   `name:"hits"`
		Events  *mongo.Outbox    `name:"events"`
		Raw     *mongo.RawFilter `name:"raw"`
	}
	step := mongo.GoStep{Version: 1, Name: "noop", Run: func(context.Context, func(string) (*driver.Collection, error)) error { return nil }}
	start(t, modules.Lifecycle(), mongo.Module("m",
		mongo.Routed(resolve, mongo.RoutedConfig{ClientOptions: func(o *options.ClientOptions) {
			o.SetServerSelectionTimeout(2 * time.Second).SetConnectTimeout(2 * time.Second)
		}}),
		mongo.Database(db), modules.RequiredIsolation(tenancy.Dedicated), modules.AllowTeardown(), mongo.GoSteps(step),
		mongo.Document[item]("items", mongo.RouteConfig{Collection: naming.Shared("items")}),
		mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("orders")}),
		mongo.Document[note]("notes", mongo.RouteConfig{Collection: naming.Shared("notes"), Database: naming.PerTenant(prefix)}),
		mongo.SearchRoute("find", mongo.RouteConfig{Collection: naming.Shared("find")}),
		mongo.CounterRoute("hits", mongo.RouteConfig{Collection: naming.Shared("hits")}),
		mongo.OutboxRoute("events", mongo.RouteConfig{Collection: naming.Shared("events")}),
		mongo.RawFilterRoute("raw", mongo.RouteConfig{Collection: naming.Shared("raw")})),
		fx.Provide(func() planter { return planter{} }),
		modules.ProvideTenantState(func(planter) modules.TenantState {
			return modules.TenantState{Module: "zz", Backend: "test", Offboard: func(ctx context.Context, id tenancy.ID) error {
				if plant == nil {
					return nil
				}
				return plant(ctx, id)
			}}
		}),
		fx.Populate(&r))
	ctx := context.Background()
	use := func(id tenancy.ID) {
		t.Helper()
		if _, err := r.Tenants.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Prov.Migrate(ctx, id); err != nil {
			t.Fatal(err)
		}
		c := tenancy.WithTenant(ctx, id)
		for _, err := range []error{
			func() error { _, err := r.Items.Create(c, "i", item{Name: "x"}); return err }(),
			func() error { _, err := r.Orders.Create(c, "o", order{Total: 1}); return err }(),
			func() error { _, err := r.Notes.Create(c, "n", note{Name: "x"}); return err }(),
			r.Find.Put(c, "f", "red apple"),
			func() error { _, err := r.Hits.Add(c, "h", 1); return err }(),
			r.Events.Write(c, outbox.Message{EventID: "e", Topic: "t", Payload: []byte("x")}),
			r.Raw.Insert(c, bson.D{{Key: "_id", Value: "r"}}),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	use(a)
	use(b)
	use(c)
	if n, err := raw.Database(dbOf(a)).Collection("tenantwire_migrations").CountDocuments(ctx, bson.D{}); err != nil || n == 0 {
		t.Fatalf("A's migration records before offboarding: %d %v", n, err)
	}

	rep, err := r.Tenants.Offboard(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	var line modules.StepReport
	for _, l := range rep {
		if l.Module == "m" {
			line = l
		}
	}
	checked := map[string]bool{}
	for _, f := range line.Checked {
		checked[f.Route+" "+f.Name] = true
	}
	for _, want := range []string{"items collection", "orders collection", "notes database", "find collection", "hits collection",
		"events collection", "raw collection", " migration records", " tenant database"} {
		if !checked[want] {
			t.Errorf("the verifier did not check %q: checked %+v", want, line.Checked)
		}
	}
	if len(line.Left) != 0 {
		t.Fatalf("left after offboarding A: %+v", line.Left)
	}
	// The tenant's databases hold nothing of it: no route's collection,
	// no migration record.
	for _, name := range []string{dbOf(a), mongo.DatabaseName(prefix, a)} {
		names, err := raw.Database(name).ListCollectionNames(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		names = slices.DeleteFunc(names, func(s string) bool { return s == "tenantwire_identity" })
		if len(names) != 0 {
			t.Errorf("A's database %s after offboarding: %v", name, names)
		}
	}
	for _, coll := range []string{"items", "orders", "find", "hits", "events", "raw"} {
		if n, err := raw.Database(dbOf(b)).Collection(coll).CountDocuments(ctx, bson.D{}); err != nil || n == 0 {
			t.Errorf("B's %s after offboarding A: %d %v, want kept", coll, n, err)
		}
	}
	if _, err := r.Tenants.VerifyErasure(ctx, a); err != nil {
		t.Errorf("VerifyErasure after offboarding A: %v", err)
	}

	// A document in a route's collection written after the teardown.
	plant = func(ctx context.Context, id tenancy.ID) error {
		_, err := raw.Database(dbOf(id)).Collection("items").InsertOne(ctx, bson.D{{Key: "_id", Value: "late"}})
		return err
	}
	_, err = r.Tenants.Offboard(ctx, b)
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeTenantErasureIncomplete || te.Module != "m" || te.Route != "items" ||
		!strings.Contains(te.Detail, `family "collection"`) {
		t.Fatalf("a document in a route's collection after the teardown: %v", err)
	}
	if !r.Tenants.Suspended(b) {
		t.Fatal("the tenant must stay suspended")
	}
	// A collection no route declares, in the tenant's own database.
	plant = func(ctx context.Context, id tenancy.ID) error {
		_, err := raw.Database(dbOf(id)).Collection("forgotten").InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}})
		return err
	}
	_, err = r.Tenants.Offboard(ctx, b)
	if !errors.As(err, &te) || te.Code != tenancy.CodeTenantErasureIncomplete || !strings.Contains(te.Detail, `family "tenant database"`) ||
		!strings.Contains(te.Detail, "forgotten") {
		t.Fatalf("a collection no route declares: %v", err)
	}
	if !r.Tenants.Suspended(b) {
		t.Fatal("the tenant must stay suspended")
	}
	plant = nil
	if err := raw.Database(dbOf(b)).Collection("forgotten").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Tenants.Offboard(ctx, b); err != nil {
		t.Fatalf("offboard again: %v", err)
	}

	// OffboardAll, which verifies nothing, removes the same families.
	if rep := r.Tenants.OffboardAll(ctx, []tenancy.ID{c}, migrate.Options{}); len(rep.Failures) != 0 {
		t.Fatalf("OffboardAll: %+v", rep.Failures)
	}

	// The verifier's client (and OffboardAll's) was evicted: an audit
	// resolves again, and a server it cannot reach is an error, not an
	// erasure.
	unreachable = true
	for _, id := range []tenancy.ID{a, c} {
		if _, err := r.Tenants.VerifyErasure(ctx, id); err == nil {
			t.Errorf("VerifyErasure of %s on an unreachable server reported the tenant erased", id)
		}
	}
	unreachable = false
	if _, err := r.Tenants.VerifyErasure(ctx, c); err != nil {
		t.Errorf("VerifyErasure after OffboardAll: %v", err)
	}
}
