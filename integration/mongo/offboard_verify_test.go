package mongo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestOffboardVerifiesMongoErasure, on FerretDB: a tenant with a
// per-tenant collection and documents in a tagged route's shared
// collection is offboarded with both gone (the tagged documents deleted,
// another tenant's kept) and the report naming what was checked. A
// tagged document of the tenant written after the teardown (by a module
// offboarded after it) fails Offboard with tenant_erasure_incomplete
// naming the family and route; the tenant stays suspended.
func TestOffboardVerifiesMongoErasure(t *testing.T) {
	opts, db := plainDB(t)
	raw := client(t, uriA).Database(db)
	t.Cleanup(func() { _ = raw.Drop(context.Background()) })
	type planter struct{}
	plant := false
	var r struct {
		fx.In
		Tenants *modules.Tenants
		Orders  *mongo.Documents[order]
		Items   *mongo.Documents[item]
	}
	start(t, modules.Lifecycle(), mongo.Module("m", append(opts, modules.AllowTeardown(),
		mongo.Document[order]("orders", mongo.RouteConfig{Collection: naming.PerTenant("orders")}),
		mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")}))...),
		fx.Provide(func() planter { return planter{} }),
		modules.ProvideTenantState(func(planter) modules.TenantState {
			return modules.TenantState{Module: "zz", Backend: "test", Offboard: func(ctx context.Context, id tenancy.ID) error {
				if !plant {
					return nil
				}
				_, err := raw.Collection("items").InsertOne(ctx, bson.D{{Key: "_id", Value: "late-" + id.Hex()}, {Key: "tenant_id", Value: id.String()}})
				return err
			}}
		}),
		fx.Populate(&r))
	a := tenancy.MustParseID("0ffb0000-0000-4000-8000-00000000000a")
	b := tenancy.MustParseID("0ffb0000-0000-4000-8000-00000000000b")
	use := func(id tenancy.ID) {
		t.Helper()
		if _, err := r.Tenants.Provision(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		ctx := tenancy.WithTenant(context.Background(), id)
		if _, err := r.Orders.Create(ctx, "o", order{Total: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Items.Create(ctx, "i", item{}); err != nil {
			t.Fatal(err)
		}
	}
	use(a)
	use(b)
	rep, err := r.Tenants.Offboard(context.Background(), a)
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
	if !checked["orders collection"] || !checked["items tagged documents"] || len(line.Left) != 0 {
		t.Fatalf("the verifier's report: checked %+v, left %+v", line.Checked, line.Left)
	}
	for id, want := range map[tenancy.ID]int64{a: 0, b: 1} {
		if n, err := raw.Collection("items").CountDocuments(context.Background(), bson.D{{Key: "tenant_id", Value: id.String()}}); err != nil || n != want {
			t.Errorf("tenant %s's tagged documents after offboarding A: %d %v, want %d", id, n, err, want)
		}
	}

	plant = true
	_, err = r.Tenants.Offboard(context.Background(), b)
	plant = false
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeTenantErasureIncomplete || te.Module != "m" || te.Route != "items" ||
		!strings.Contains(te.Detail, `family "tagged documents"`) {
		t.Fatalf("a tagged document written after the teardown: %v", err)
	}
	if !r.Tenants.Suspended(b) {
		t.Fatal("the tenant must stay suspended")
	}
	if _, err := r.Tenants.Offboard(context.Background(), b); err != nil {
		t.Fatalf("offboard again: %v", err)
	}
}
