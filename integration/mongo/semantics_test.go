package mongo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// The document store behaves as the memory one: versions, conflicts,
// filters, ordering and limits.
func TestDocumentSemantics(t *testing.T) {
	var docs *mongo.Documents[item]
	start(t, mongo.Module("m", append(plain(t),
		mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")}))...),
		fx.Populate(&docs))
	ctx := ctxOf(tenancytest.TenantA)
	for i, name := range []string{"c", "a", "b", "d"} {
		if v, err := docs.Create(ctx, name, item{Name: name, N: i}); err != nil || v != 1 {
			t.Fatalf("create %s: %v %v", name, v, err)
		}
	}
	if _, err := docs.Create(ctx, "a", item{}); !errors.Is(err, document.ErrExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	if _, err := docs.Get(ctx, "zz"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("missing get: %v", err)
	}
	if v, err := docs.Update(ctx, "a", item{Name: "a", N: 10}, 1); err != nil || v != 2 {
		t.Fatalf("update: %v %v", v, err)
	}
	if _, err := docs.Update(ctx, "a", item{}, 1); !errors.Is(err, document.ErrConflict) {
		t.Fatalf("stale update: %v", err)
	}
	if _, err := docs.Update(ctx, "zz", item{}, 1); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("missing update: %v", err)
	}
	ids := func(q document.Query) []string {
		t.Helper()
		recs, err := docs.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, r.ID)
		}
		return out
	}
	if got := ids(document.Query{}); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("by id: %v", got)
	}
	if got := ids(document.Query{OrderBy: "n", Desc: true, Limit: 2}); !slices.Equal(got, []string{"a", "d"}) {
		t.Errorf("by n desc limit 2: %v", got)
	}
	q := document.Query{Filters: []document.Filter{{Field: "n", Op: document.Gte, Value: 2}, {Field: "name", Op: document.Ne, Value: "d"}}}
	if got := ids(q); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("filtered: %v", got)
	}
	if n, err := docs.Count(ctx, q); err != nil || n != 2 {
		t.Errorf("count: %d %v", n, err)
	}
	if err := docs.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := docs.Delete(ctx, "a"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// Every document a tagged route writes carries tenant_id, seen through
// the raw driver.
func TestTaggedWritesStampTenant(t *testing.T) {
	opts, db := plainDB(t)
	var docs *mongo.Documents[item]
	start(t, mongo.Module("m", append(opts,
		mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")}))...),
		fx.Populate(&docs))
	if _, err := docs.Create(ctxOf(tenancytest.TenantA), "x", item{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	raw, err := client(t, uriA).Database(db).Collection("items").FindOne(context.Background(), bson.D{}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if got := raw.Lookup("tenant_id").StringValue(); got != tenancytest.TenantA.String() {
		t.Fatalf("tenant_id = %q", got)
	}
}

func TestProvisioning(t *testing.T) {
	var prov *mongo.Provisioner
	opts, db := plainDB(t)
	opts = append(opts, modules.AllowTeardown(),
		mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("items")}),
		mongo.SearchRoute("find", mongo.RouteConfig{Collection: naming.Shared("find"), Database: naming.PerTenant("s")}),
		mongo.OutboxRoute("events", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("events")}))
	start(t, mongo.Module("m", opts...), named("m", &prov))
	ctx := context.Background()
	for range 2 { // idempotent
		if err := prov.Provision(ctx, tenancytest.TenantA); err != nil {
			t.Fatal(err)
		}
	}
	c := client(t, uriA)
	coll := c.Database(db).Collection(mongo.CollectionName("items", tenancytest.TenantA))
	if !hasIndex(t, coll, "items_id") {
		t.Error("per-tenant collection lacks its index")
	}
	if !hasIndex(t, c.Database(mongo.DatabaseName("s", tenancytest.TenantA)).Collection("find"), "find_terms") {
		t.Error("per-tenant database lacks the search index")
	}
	if !hasIndex(t, c.Database(db).Collection("events"), "events_pending") {
		t.Error("shared outbox lacks its index")
	}
	if err := prov.Teardown(ctx, tenancytest.TenantA); err != nil {
		t.Fatal(err)
	}
	names, err := c.Database(db).ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, mongo.CollectionName("items", tenancytest.TenantA)) || !slices.Contains(names, "events") {
		t.Errorf("after teardown: %v (per-tenant gone, shared kept)", names)
	}
	dbs, err := c.ListDatabaseNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(dbs, mongo.DatabaseName("s", tenancytest.TenantA)) {
		t.Errorf("per-tenant database survived teardown: %v", dbs)
	}
}

func hasIndex(t *testing.T, coll *driver.Collection, name string) bool {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(specs, func(s driver.IndexSpecification) bool { return s.Name == name })
}

// The shared outbox relay drains a tenant-global outbox unbound and
// delivers each row under its own tenant; a tenant-aware outbox refuses an
// unbound or tenant-global read and needs the sharded relay.
func TestOutboxRelay(t *testing.T) {
	tenants := []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB, tenancy.Default}
	for _, c := range []struct {
		name    string
		aware   bool
		relay   func(outbox.RelayConfig) mongo.Option
		sharded bool
	}{
		{"tenant-global", false, func(rc outbox.RelayConfig) mongo.Option { return mongo.Relay("events", rc) }, false},
		{"sharded", true, func(rc outbox.RelayConfig) mongo.Option {
			rc.Tenants = func(context.Context) ([]tenancy.ID, error) { return tenants, nil }
			return mongo.Relay("events", rc)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			got := map[string]int{}
			dest := outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error {
				bound, _ := tenancy.FromContext(ctx)
				if bound != m.Tenant || string(m.Payload) != bound.String() || m.Headers["h"] != "v" {
					t.Errorf("delivered %+v under %v", m, bound)
				}
				mu.Lock()
				got[m.EventID]++
				mu.Unlock()
				return nil
			})
			var o *mongo.Outbox
			cfg := mongo.RouteConfig{TenantAware: c.aware, Collection: naming.Shared("relay_" + c.name[:1])}
			start(t, mongo.Module("m", append(plain(t),
				mongo.OutboxRoute("events", cfg),
				c.relay(outbox.RelayConfig{Destination: dest, Idle: 5 * time.Millisecond, WorkerConfig: shards.WorkerConfig{Backoff: 5 * time.Millisecond}}))...),
				named("events", &o))
			var ids []string
			for i := range 9 {
				id := tenants[i%3]
				ev := fmt.Sprintf("ev-%d", i)
				if err := o.Write(ctxOf(id), outbox.Message{EventID: ev, Topic: "orders", Payload: []byte(id.String()), Headers: map[string]string{"h": "v"}}); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, ev)
			}
			// Delivered first, marked when the pass completes: wait for both.
			deadline := time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				n := len(got)
				mu.Unlock()
				pending := 0
				for _, id := range tenants {
					left, err := o.Pending(ctxOf(id), 0)
					if err != nil {
						t.Fatal(err)
					}
					pending += len(left)
				}
				if n == len(ids) && pending == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("relay delivered %d of %d rows; %d still pending", n, len(ids), pending)
				}
				time.Sleep(10 * time.Millisecond)
			}
			for ev, n := range got {
				if n != 1 {
					t.Errorf("event %s delivered %d times by one relay", ev, n)
				}
			}
			if c.aware {
				for _, ctx := range []context.Context{context.Background(), tenancy.WithGlobal(context.Background())} {
					if _, err := o.Pending(ctx, 0); !errors.Is(err, tenancy.CodeTenantUnbound) {
						t.Fatalf("tenant-aware outbox read without a tenant: %v", err)
					}
				}
			}
		})
	}
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, mongo.Module("m", append(plain(t),
		mongo.OutboxRoute("events", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("events")}),
		mongo.Relay("events", outbox.RelayConfig{Destination: outbox.DestinationFunc(
			func(context.Context, outbox.Message) error { return nil })}))...))
}
