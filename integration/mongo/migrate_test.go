package mongo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

type order struct {
	Total int `json:"total"`
}

// TestMongoMigrations: a JSON index step and a Go step reach every
// tenant's own collection (namespace: a collection per tenant) on
// FerretDB; a dry run lists them, two concurrent migrators run each step
// once between them, a rerun changes nothing, and an edited applied file
// is refused with a coded error.
func TestMongoMigrations(t *testing.T) {
	opts, db := plainDB(t)
	route := mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("orders")})
	reg := migrate.NewMemoryRegistry()
	// Provisioned by a build without the migrations: every tenant at 0.
	var prov *mongo.Provisioner
	start(t, mongo.Module("m", append(opts, route, modules.TenantRegistry(reg))...), named("m", &prov))
	ctx := context.Background()
	ids := make([]tenancy.ID, 12)
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-c000-%012x", i+1))
	}
	if rep, err := prov.ProvisionAll(ctx, ids, migrate.Options{Concurrency: 3}); err != nil || rep.Done != len(ids) {
		t.Fatalf("provision: %+v, %v", rep.Failures, err)
	}
	files := fstest.MapFS{
		"0001_by_total.json":    {Data: []byte(`{"route": "orders", "indexes": [{"name": "by_total", "keys": [{"field": "value.total", "order": -1}]}]}`)},
		"0003_by_total_id.json": {Data: []byte(`{"route": "orders", "indexes": [{"name": "by_total_id", "keys": [{"field": "value.total", "order": 1}, {"field": "_id", "order": 1}]}]}`)},
	}
	var runs sync.Map // tenant collection → times the Go step ran
	seed := mongo.GoStep{Version: 2, Name: "seed", Run: func(ctx context.Context, coll func(string) (*driver.Collection, error)) error {
		c, err := coll("orders")
		if err != nil {
			return err
		}
		n, _ := runs.LoadOrStore(c.Name(), new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: "seed"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "marker", Value: 1}}}}, options.UpdateOne().SetUpsert(true))
		return err
	}}
	start(t, mongo.Module("m", append(opts, route, modules.TenantRegistry(reg), modules.Migrations(files), mongo.GoSteps(seed))...), named("m", &prov))
	plan, err := prov.MigrateAll(ctx, nil, migrate.Options{DryRun: true})
	if err != nil || len(plan.Changes) != 3*len(ids) {
		t.Fatalf("dry run: %d changes, %v", len(plan.Changes), err)
	}
	var (
		wg   sync.WaitGroup
		reps [2]migrate.Report
	)
	for i := range reps {
		wg.Go(func() { reps[i], _ = prov.MigrateAll(ctx, nil, migrate.Options{Concurrency: 3}) })
	}
	wg.Wait()
	failed := 0
	for _, r := range reps {
		for _, f := range r.Failures { // a step claimed by the other migrator at that moment
			failed++
			if f.Err == nil || !errors.Is(f.Err, migrate.ErrStepClaimed) {
				t.Errorf("failure: %v", f.Err)
			}
		}
	}
	if n := len(reps[0].Changes) + len(reps[1].Changes); n != 3*len(ids) {
		t.Errorf("the two migrators applied %d steps between them, want %d (failures %d)", n, 3*len(ids), failed)
	}
	rest, err := prov.MigrateAll(ctx, nil, migrate.Options{})
	if err != nil || rest.Done != len(ids) || len(rest.Changes) != 0 {
		t.Fatalf("rerun: %+v %v", rest, err)
	}
	c := client(t, uriA).Database(db)
	for _, id := range ids {
		coll := mongo.CollectionName("orders", id)
		if n, ok := runs.Load(coll); !ok || n.(*atomic.Int32).Load() != 1 {
			t.Errorf("%s: the Go step ran %v times", coll, n)
		}
		specs, err := c.Collection(coll).Indexes().ListSpecifications(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range specs {
			names = append(names, s.Name)
		}
		if !slices.Contains(names, "by_total") || !slices.Contains(names, "by_total_id") {
			t.Errorf("%s indexes: %v", coll, names)
		}
	}
	all, _ := reg.List(ctx)
	for _, tn := range all {
		if tn.Versions["m"] != 3 {
			t.Errorf("registry: %s at %d", tn.ID, tn.Versions["m"])
		}
	}
	files["0001_by_total.json"] = &fstest.MapFile{Data: []byte(`{"route": "orders", "indexes": [{"name": "by_total", "keys": [{"field": "value.total", "order": 1}]}]}`)}
	var edited *migrate.Runner
	start(t, mongo.Module("m", append(opts, route, modules.Migrations(files), mongo.GoSteps(seed))...), named("m", &edited))
	_, err = edited.Migrate(ctx, ids[0])
	if tenancy.CodeOf(err) != tenancy.CodeMigrationHistoryConflict {
		t.Errorf("edited file: %v", err)
	}
	unknown := fstest.MapFS{"0001_x.json": {Data: []byte(`{"route": "nope", "indexes": [{"name": "x", "keys": [{"field": "a", "order": 1}]}]}`)}}
	if err := fx.New(fx.NopLogger, mongo.Module("m", append(opts, route, modules.Migrations(unknown))...)).Err(); tenancy.CodeOf(err) != tenancy.CodeWiringInvalid {
		t.Errorf("a step naming an unknown route: %v", err)
	}
}
