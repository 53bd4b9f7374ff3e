package mongo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestOffboardCutMongo, on FerretDB: an offboard of C (its per-tenant
// collection and its documents of a tagged shared one) cut at each
// command it sends in turn (its verifier's too), then rerun, leaves
// nothing of C and B's documents as they were.
func TestOffboardCutMongo(t *testing.T) {
	// Each command a step of the cut, counted as it starts: it may or may
	// not reach the server, as in a process killed while sending it.
	var cut tenancytest.Cutter
	c, err := driver.Connect(options.Client().ApplyURI(uriA).SetTimeout(30 * time.Second).SetMonitor(&event.CommandMonitor{
		Started: func(ctx context.Context, _ *event.CommandStartedEvent) { cut.Step(ctx) }}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	db := freshName()
	t.Cleanup(func() { _ = c.Database(db).Drop(context.Background()) })
	var r archiveMongo
	start(t, modules.Lifecycle(), mongo.Module("m", mongo.Use(c), mongo.Database(db), modules.AllowTeardown(),
		mongo.Document[order]("orders", mongo.RouteConfig{Collection: naming.PerTenant("orders")}),
		mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")})),
		fx.Populate(&r))
	b, target := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	writeMongo(t, r, b)
	write := func(ctx context.Context) error {
		for i := range 5 {
			if _, err := r.Orders.Create(ctx, fmt.Sprint("o", i), order{Total: i}); err != nil {
				return err
			}
			if _, err := r.Items.Create(ctx, fmt.Sprint("i", i), item{Name: "x"}); err != nil {
				return err
			}
		}
		return nil
	}
	cuts := tenancytest.CheckOffboardCut(t, tenancytest.OffboardCut{Tenants: r.Tenants, Target: target, Other: b, Write: write, Most: 100, Cut: cut.Cut})
	if cuts == 0 {
		t.Fatal("no offboard was cut")
	}
	t.Logf("the offboard was cut %d times, at each of its first commands and then at doubling counts", cuts)
}
