package mongo_test

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// envelope is a stored record as a hand-written lookup decodes it.
type envelope struct {
	ID  string `bson:"id"`
	V   int64  `bson:"v"`
	Doc item   `bson:"doc"`
}

// handFind is the lookup the ratio pairs' baselines write by hand: FindOne
// decoded from the raw reply with bson.Unmarshal, the cheapest way to read
// the envelope (SingleResult.Decode costs some 15 allocations and 4.5 KB
// more a call, which a careful hand would not pay).
func handFind(coll *driver.Collection, filter bson.D) (envelope, error) {
	var e envelope
	raw, err := coll.FindOne(context.Background(), filter).Raw()
	if err != nil {
		return e, err
	}
	return e, bson.Unmarshal(raw, &e)
}

// finds records the find commands a client sends.
type finds struct {
	mu   sync.Mutex
	cmds []bson.Raw
}

func (f *finds) take() []bson.Raw {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.cmds
	f.cmds = nil
	return out
}

func monitoredClient(t *testing.T, uri string) (*driver.Client, *finds) {
	t.Helper()
	f := &finds{}
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "find" {
			f.mu.Lock()
			f.cmds = append(f.cmds, slices.Clone(e.Command))
			f.mu.Unlock()
		}
	}}
	c, err := driver.Connect(options.Client().ApplyURI(uri).SetTimeout(30 * time.Second).SetMonitor(mon))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c, f
}

// sent is the one find command f recorded, without the session and
// cluster time the driver attaches to every command.
func sent(t *testing.T, f *finds) bson.Raw {
	t.Helper()
	cmds := f.take()
	if len(cmds) != 1 {
		t.Fatalf("%d find commands sent, want 1: %v", len(cmds), cmds)
	}
	var d, kept bson.D
	if err := bson.Unmarshal(cmds[0], &d); err != nil {
		t.Fatal(err)
	}
	for _, e := range d {
		switch e.Key {
		case "lsid", "$clusterTime":
		case "maxTimeMS":
			// The time left of the client's timeout when the command was
			// sent: a few milliseconds apart on a loaded machine.
			kept = append(kept, bson.E{Key: e.Key, Value: "present"})
		default:
			kept = append(kept, e)
		}
	}
	b, err := bson.Marshal(kept)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Documents.Get sends the find the ratio pairs' baselines send by hand,
// field for field: no tenant field on a collection of the tenant's own, no
// projection, sort, batch size, read preference or read concern of its
// own. A filter the server has to evaluate differently would make the
// pairs compare two queries instead of two clients.
func TestGetSendsTheHandWrittenFind(t *testing.T) {
	c, f := monitoredClient(t, uriA)
	db := freshName()
	id := tenancytest.TenantA
	for _, tc := range []struct {
		name   string
		cfg    mongo.RouteConfig
		coll   string
		filter bson.D
	}{
		{"per-tenant collection", mongo.RouteConfig{Collection: naming.PerTenant("items")},
			mongo.CollectionName("items", id), bson.D{{Key: "_id", Value: "k"}}},
		{"tagged", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")},
			"items", bson.D{{Key: "tenant_id", Value: id.String()}, {Key: "_id", Value: id.Hex() + ":k"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var docs *mongo.Documents[item]
			start(t, mongo.Module("m", mongo.Use(c), mongo.Database(db), mongo.Document[item]("items", tc.cfg)), fx.Populate(&docs))
			ctx := tenancy.WithTenant(context.Background(), id)
			if _, err := docs.Create(ctx, "k", item{Name: "x", N: 1}); err != nil {
				t.Fatal(err)
			}
			f.take()
			if r, err := docs.Get(ctx, "k"); err != nil || r.Value != (item{Name: "x", N: 1}) {
				t.Fatalf("get: %+v %v", r, err)
			}
			ours := sent(t, f)
			if e, err := handFind(c.Database(db).Collection(tc.coll), tc.filter); err != nil || e.Doc != (item{Name: "x", N: 1}) {
				t.Fatalf("hand-written find: %+v %v", e, err)
			}
			if hand := sent(t, f); !bytes.Equal(ours, hand) {
				t.Fatalf("Get sent\n %s\nthe hand-written lookup\n %s", ours, hand)
			}
		})
	}
}
