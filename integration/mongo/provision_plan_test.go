package mongo_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestProvisionAllDryRunListsWhatIsMissing: on FerretDB, ProvisionAll's
// dry run lists, per tenant, the databases, collections and indexes its
// provisioning would create (the module's database and a shared
// collection too, while the server lacks them) and the steps that would
// run; afterwards the server has none of them and the registry is empty.
// A provisioned tenant has nothing to create and no step to run; the zero
// tenant is refused.
func TestProvisionAllDryRunListsWhatIsMissing(t *testing.T) {
	opts, db := plainDB(t)
	dbPrefix := "p" + db[2:10]
	reg := migrate.NewMemoryRegistry()
	var prov *mongo.Provisioner
	start(t, mongo.Module("m", append(opts, modules.TenantRegistry(reg),
		mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("orders")}),
		mongo.SearchRoute("find", mongo.RouteConfig{Collection: naming.Shared("find"), Database: naming.PerTenant(dbPrefix)}),
		mongo.CounterRoute("hits", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("hits")}),
		modules.Migrations(fstest.MapFS{"0001_by_total.json": {Data: []byte(`{"route": "orders", "indexes": [{"name": "by_total", "keys": [{"field": "value.total", "order": -1}]}]}`)}}),
	)...), named("m", &prov))
	ctx := context.Background()
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	t.Cleanup(func() {
		c := client(t, uriA)
		for _, name := range []string{db, mongo.DatabaseName(dbPrefix, a), mongo.DatabaseName(dbPrefix, b)} {
			_ = c.Database(name).Drop(context.Background())
		}
	})
	want := func(id tenancy.ID, module bool) []string {
		orders, own := db+"."+mongo.CollectionName("orders", id), mongo.DatabaseName(dbPrefix, id)
		var out []string
		if module {
			out = append(out, "database "+db)
		}
		out = append(out, "collection "+orders, "index orders_id on "+orders,
			"database "+own, "collection "+own+".find", "index find_terms on "+own+".find")
		if module {
			out = append(out, "collection "+db+".hits")
		}
		return append(out, "step 1")
	}
	rep, err := prov.ProvisionAll(ctx, []tenancy.ID{a, b, {}}, migrate.Options{DryRun: true, Concurrency: 1})
	if err != nil || rep.Done != 2 || len(rep.Failures) != 1 || tenancy.CodeOf(rep.Failures[0].Err) != tenancy.CodeTenantUnbound {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	got := testsvc.Plan(rep)
	for _, id := range []tenancy.ID{a, b} {
		if !slices.Equal(got[id], want(id, true)) {
			t.Errorf("plan of %s\n%q\nwant\n%q", id, got[id], want(id, true))
		}
	}
	// The server has none of the test's databases.
	names, err := client(t, uriA).ListDatabaseNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == db || strings.HasPrefix(n, dbPrefix) {
			t.Errorf("a dry run created database %s", n)
		}
	}
	if all, _ := reg.List(ctx); len(all) != 0 {
		t.Fatalf("a dry run registered %+v", all)
	}

	// Provisioned, A has nothing to create and no step to run; B's plan no
	// longer has what A's provisioning made (the module's database, the
	// shared collection).
	if err := prov.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	rep, err = prov.ProvisionAll(ctx, []tenancy.ID{a, b}, migrate.Options{DryRun: true, Concurrency: 1})
	got = testsvc.Plan(rep)
	if err != nil || rep.Done != 2 || len(got[a]) != 0 || !slices.Equal(got[b], want(b, false)) {
		t.Fatalf("after provisioning A: A's plan %q, B's %q (want none and %q), %v", got[a], got[b], want(b, false), err)
	}

	// An index dropped behind the module's back is listed again.
	orders := client(t, uriA).Database(db).Collection(mongo.CollectionName("orders", a))
	if err := orders.Indexes().DropOne(ctx, "orders_id"); err != nil {
		t.Fatal(err)
	}
	rep, err = prov.ProvisionAll(ctx, []tenancy.ID{a}, migrate.Options{DryRun: true})
	if got := testsvc.Plan(rep)[a]; err != nil || !slices.Equal(got, []string{"index orders_id on " + db + "." + mongo.CollectionName("orders", a)}) {
		t.Fatalf("plan after an index drop: %q, %v", got, err)
	}
}
