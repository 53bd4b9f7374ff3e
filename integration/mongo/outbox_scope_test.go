package mongo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// pendingOf returns the event ids and payloads ctx's Pending sees.
func pendingOf(t *testing.T, o *mongo.Outbox, ctx context.Context) map[string]string {
	t.Helper()
	msgs, err := o.Pending(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range msgs {
		out[m.Tenant.String()+"/"+m.EventID] = string(m.Payload)
	}
	return out
}

// TestOutboxEventIDsPerTenant: two tenants use the same event id on every
// outbox shape; both adds succeed (neither can take the id first or learn
// that the other used it), each sees only its own row, and acknowledging
// one tenant's row leaves the other's pending.
func TestOutboxEventIDsPerTenant(t *testing.T) {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	for name, cfg := range map[string]mongo.RouteConfig{
		"tenant-global": {Collection: naming.Shared("ev")},
		"tagged":        {TenantAware: true, Collection: naming.Shared("ev")},
		"namespace":     {TenantAware: true, Collection: naming.PerTenant("ev")},
	} {
		t.Run(name, func(t *testing.T) {
			var o *mongo.Outbox
			start(t, mongo.Module("m", append(plain(t), mongo.OutboxRoute("events", cfg))...), named("events", &o))
			for _, id := range []tenancy.ID{a, b} {
				if err := o.Write(ctxOf(id), outbox.Message{EventID: "e1", Topic: "t", Payload: []byte(id.String())}); err != nil {
					t.Fatalf("%s's write of e1: %v", id, err)
				}
			}
			if err := o.Write(ctxOf(a), outbox.Message{EventID: "e1", Topic: "t"}); err == nil {
				t.Error("A added its own event id twice")
			}
			for _, id := range []tenancy.ID{a, b} {
				got := pendingOf(t, o, ctxOf(id))
				if len(got) != 1 || got[id.String()+"/e1"] != id.String() {
					t.Errorf("%s sees %v", id, got)
				}
			}
			if name == "tenant-global" {
				// One claim holding both rows: completing A's leaves B's.
				batch, err := o.Claim(context.Background(), 10)
				if err != nil {
					t.Fatal(err)
				}
				var mine []outbox.Message
				for _, m := range batch.Messages() {
					if m.Tenant == a {
						mine = append(mine, m)
					}
				}
				if len(batch.Messages()) != 2 || len(mine) != 1 {
					t.Fatalf("claimed %+v", batch.Messages())
				}
				if err := batch.Complete(context.Background(), mine); err != nil {
					t.Fatal(err)
				}
			} else if err := o.MarkDelivered(ctxOf(a), "e1"); err != nil {
				t.Fatal(err)
			}
			if got := pendingOf(t, o, ctxOf(a)); len(got) != 0 {
				t.Errorf("A's e1 still pending: %v", got)
			}
			if got := pendingOf(t, o, ctxOf(b)); len(got) != 1 {
				t.Errorf("acknowledging A's e1 acknowledged B's: %v", got)
			}
			// Acknowledging by hand names the row's tenant too.
			if err := o.MarkDelivered(ctxOf(a), "e1"); err != nil {
				t.Errorf("A's repeated mark: %v", err)
			}
			if got := pendingOf(t, o, ctxOf(b)); len(got) != 1 {
				t.Errorf("A's mark reached B's row: %v", got)
			}
		})
	}
}

// TestScopedOutboxRefusesUnbound: a tenant-scoped outbox refuses an add
// with no tenant bound, and under the tenant-global scope, with
// tenant_unbound, and stores nothing.
func TestScopedOutboxRefusesUnbound(t *testing.T) {
	for name, cfg := range map[string]mongo.RouteConfig{
		"tagged":    {TenantAware: true, Collection: naming.Shared("su")},
		"namespace": {TenantAware: true, Collection: naming.PerTenant("su")},
	} {
		t.Run(name, func(t *testing.T) {
			var o *mongo.Outbox
			start(t, mongo.Module("m", append(plain(t), mongo.OutboxRoute("events", cfg))...), named("events", &o))
			for scope, ctx := range map[string]context.Context{"unbound": context.Background(), "global": tenancy.WithGlobal(context.Background())} {
				if err := o.Write(ctx, outbox.Message{EventID: "x", Topic: "t"}); !errors.Is(err, tenancy.CodeTenantUnbound) {
					t.Errorf("%s add: %v, want tenant_unbound", scope, err)
				}
				if err := o.MarkDelivered(ctx, "x"); !errors.Is(err, tenancy.CodeTenantUnbound) {
					t.Errorf("%s mark: %v, want tenant_unbound", scope, err)
				}
			}
			for _, id := range []tenancy.ID{tenancytest.TenantA, tenancy.Default} {
				if got := pendingOf(t, o, ctxOf(id)); len(got) != 0 {
					t.Errorf("a refused add stored %v", got)
				}
			}
		})
	}
}

// The raw-filter route keeps its tenant condition whatever the filter says.
// A dedicated database serves one tenant (a second tenant on it is refused),
// so B's document is planted in A's database with a plain driver: data the
// adapter did not write, which only the route's own condition keeps from A.
func TestRawFilterKeepsTenantPredicate(t *testing.T) {
	a, b := tenancytest.TenantA, tenancytest.TenantB
	db := freshName()
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		if id != a {
			return routing.Credentials{}, errors.New("no database for this tenant")
		}
		return routing.Credentials{Endpoint: uriA, Params: map[string]string{"database": db}}, nil
	}
	var r *mongo.RawFilter
	start(t, mongo.Module("m", mongo.Routed(resolve, mongo.RoutedConfig{}), mongo.Database(db),
		mongo.RawFilterRoute("raw", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("raw")})), named("raw", &r))
	if err := r.Insert(ctxOf(a), bson.D{{Key: "_id", Value: a.Hex()}, {Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	field := "tenant_id"
	coll := client(t, uriA).Database(db).Collection("raw")
	if _, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: b.Hex()}, {Key: field, Value: b.String()}, {Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	for name, filter := range map[string]any{
		"empty":    bson.D{},
		"names B":  bson.D{{Key: field, Value: b.String()}},
		"$or":      bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: field, Value: b.String()}}, bson.D{{Key: "x", Value: 1}}}}},
		"$ne A":    bson.D{{Key: field, Value: bson.D{{Key: "$ne", Value: a.String()}}}},
		"map $or":  bson.M{"$or": bson.A{bson.M{field: bson.M{"$exists": true}}, bson.M{"_id": b.Hex()}}},
		"B's _id":  bson.D{{Key: "_id", Value: b.Hex()}},
		"$nor":     bson.D{{Key: "$nor", Value: bson.A{bson.D{{Key: field, Value: a.String()}}}}},
		"$exists":  bson.D{{Key: field, Value: bson.D{{Key: "$exists", Value: true}}}},
		"$in both": bson.D{{Key: field, Value: bson.D{{Key: "$in", Value: bson.A{a.String(), b.String()}}}}},
	} {
		docs, err := r.Find(ctxOf(a), filter, 0)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, d := range docs {
			if d.Lookup(field).StringValue() != a.String() {
				t.Errorf("%s under A returned %s", name, d)
			}
		}
	}
	// A document naming another tenant is refused, not stored as B's.
	err := r.Insert(ctxOf(a), bson.D{{Key: "_id", Value: "forged"}, {Key: field, Value: b.String()}})
	if !errors.Is(err, tenancy.CodeForeignTenant) {
		t.Errorf("a document claiming B's tenant: %v, want foreign_tenant", err)
	}
	if n, err := coll.CountDocuments(context.Background(), bson.D{{Key: "_id", Value: "forged"}}); err != nil || n != 0 {
		t.Errorf("the forged document was stored (%d, %v)", n, err)
	}
}

// TestOutboxWriteMany: one Write stores every message in order, gives an
// empty EventID a random 32-hex id, and stops at the first failing row
// (an event id already written), leaving the rows before it.
func TestOutboxWriteMany(t *testing.T) {
	var o *mongo.Outbox
	start(t, mongo.Module("m", append(plain(t), mongo.OutboxRoute("events", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("ev")}))...), named("events", &o))
	ctx := ctxOf(tenancytest.TenantA)
	if err := o.Write(ctx, outbox.Message{EventID: "e1", Topic: "t"}, outbox.Message{Topic: "t", Payload: []byte("gen")}); err != nil {
		t.Fatal(err)
	}
	if err := o.Write(ctx, outbox.Message{EventID: "e2", Topic: "t"}, outbox.Message{EventID: "e1", Topic: "t"}, outbox.Message{EventID: "e3", Topic: "t"}); err == nil {
		t.Fatal("a write repeating e1 succeeded")
	}
	got := pendingOf(t, o, ctx)
	prefix := tenancytest.TenantA.String() + "/"
	generated := 0
	for k, payload := range got {
		if id := strings.TrimPrefix(k, prefix); payload == "gen" && len(id) == 32 && strings.Trim(id, "0123456789abcdef") == "" {
			generated++
		}
	}
	_, e1 := got[prefix+"e1"]
	_, e2 := got[prefix+"e2"]
	_, e3 := got[prefix+"e3"]
	if len(got) != 3 || !e1 || !e2 || e3 || generated != 1 {
		t.Errorf("pending %v; want e1, e2 and one generated 32-hex id, not e3", got)
	}
}
