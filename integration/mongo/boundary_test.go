package mongo_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type item struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

// tier is one way of wiring a route: its module options and collection.
type tier struct {
	name   string
	want   tenancy.Tier
	module func(t *testing.T) []mongo.Option
	cfg    func(coll string) mongo.RouteConfig
}

func plain(t *testing.T) []mongo.Option {
	opts, _ := plainDB(t)
	return opts
}

// plainDB is a plain client on server A and a fresh database, named.
func plainDB(t *testing.T) ([]mongo.Option, string) {
	db := freshName()
	return []mongo.Option{mongo.Use(client(t, uriA)), mongo.Database(db)}, db
}

// dedicated routes tenant A to one server and tenant B to another (on a
// real MongoDB: one server, each tenant its own database).
func dedicated(t *testing.T) []mongo.Option {
	db := freshName()
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		c := routing.Credentials{Endpoint: uriA}
		if id == tenancytest.TenantB {
			c.Endpoint = uriB
		}
		if realMongo {
			c.Params = map[string]string{"database": db + "_" + id.Hex()[:8]}
		}
		return c, nil
	}
	return []mongo.Option{mongo.Routed(resolve, mongo.RoutedConfig{}), mongo.Database(db)}
}

var tiers = []tier{
	{"tagged", tenancy.Tagged, plain, func(c string) mongo.RouteConfig {
		return mongo.RouteConfig{TenantAware: true, Collection: naming.Shared(c)}
	}},
	{"namespace-collection", tenancy.Namespace, plain, func(c string) mongo.RouteConfig {
		// Tenant-aware too: the outbox's resolver counts only then.
		return mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant(c)}
	}},
	{"namespace-database", tenancy.Namespace, plain, func(c string) mongo.RouteConfig {
		// A fresh prefix per wiring: the tenants' databases are not the
		// test's own, so a rerun (-count, or a real MongoDB) must not find
		// an earlier run's documents in them.
		return mongo.RouteConfig{TenantAware: true, Collection: naming.Shared(c), Database: naming.PerTenant(freshName())}
	}},
	{"dedicated", tenancy.Dedicated, dedicated, func(c string) mongo.RouteConfig {
		return mongo.RouteConfig{Collection: naming.Shared(c)}
	}},
}

// wire starts a module at tier tr with route added, requiring the tier.
func wire(t *testing.T, tr tier, route mongo.Option, populate fx.Option) {
	t.Helper()
	opts := append(tr.module(t), modules.RequiredIsolation(tr.want), route)
	start(t, mongo.Module("m", opts...), populate)
}

func ctxOf(id tenancy.ID) context.Context { return tenancy.WithTenant(context.Background(), id) }

func TestBoundaryDocuments(t *testing.T) {
	for _, tr := range tiers {
		t.Run(tr.name, func(t *testing.T) {
			var docs *mongo.Documents[item]
			wire(t, tr, mongo.Document[item]("items", tr.cfg("items")), fx.Populate(&docs))
			tenancytest.Boundary(t, docProbe(t, docs))
			// B may use the same id without learning of A's record.
			if _, err := docs.Create(ctxOf(tenancytest.TenantB), "p1", item{"b", 9}); err != nil {
				t.Fatalf("B's create of the same id: %v", err)
			}
			if r, err := docs.Get(ctxOf(tenancytest.TenantA), "p1"); err != nil || r.Value.Name != "probe" {
				t.Fatalf("A's record after B's create: %+v %v", r, err)
			}
		})
	}
}

func requireNotFound(t *testing.T, op string, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, document.ErrNotFound) {
		t.Errorf("B's %s: %v, want document.ErrNotFound", op, err)
	}
}

func TestBoundarySearch(t *testing.T) {
	for _, tr := range tiers {
		t.Run(tr.name, func(t *testing.T) {
			var s *mongo.Search
			wire(t, tr, mongo.SearchRoute("find", tr.cfg("find")), named("find", &s))
			tenancytest.Boundary(t, searchProbe(t, s))
			// B's put of the same id lands in B's own index.
			if err := s.Put(ctxOf(tenancytest.TenantB), "p1", "blue"); err != nil {
				t.Fatal(err)
			}
			hits, err := s.Search(ctxOf(tenancytest.TenantA), "apple", 0)
			if err != nil || len(hits) != 1 || hits[0].Text != "red apple pie" {
				t.Fatalf("A's hits after B's put: %+v %v", hits, err)
			}
		})
	}
}

func TestBoundaryCounter(t *testing.T) {
	for _, tr := range tiers {
		t.Run(tr.name, func(t *testing.T) {
			var c *mongo.Counter
			wire(t, tr, mongo.CounterRoute("hits", tr.cfg("hits")), named("hits", &c))
			tenancytest.Boundary(t, counterProbe(c))
			if n, err := c.Add(ctxOf(tenancytest.TenantB), "p1", 1); err != nil || n != 1 {
				t.Fatalf("B's add: %d %v, want a fresh counter at 1", n, err)
			}
			if n, err := c.Get(ctxOf(tenancytest.TenantA), "p1"); err != nil || n != 5 {
				t.Fatalf("A's counter after B's add: %d %v", n, err)
			}
		})
	}
}

func TestBoundaryOutbox(t *testing.T) {
	for _, tr := range tiers {
		t.Run(tr.name, func(t *testing.T) {
			var o *mongo.Outbox
			wire(t, tr, mongo.OutboxRoute("events", tr.cfg("events")), named("events", &o))
			tenancytest.Boundary(t, outboxProbe(t, o))
			msgs, err := o.Pending(ctxOf(tenancytest.TenantA), 0)
			if err != nil || len(msgs) != 1 || msgs[0].Tenant != tenancytest.TenantA || msgs[0].Topic != "orders" {
				t.Fatalf("A's rows: %+v %v", msgs, err)
			}
		})
	}
}

func TestBoundaryRawFilter(t *testing.T) {
	tr := tiers[len(tiers)-1] // the raw hatch clears only dedicated
	var r *mongo.RawFilter
	wire(t, tr, mongo.RawFilterRoute("raw", tr.cfg("raw")), named("raw", &r))
	tenancytest.Boundary(t, rawProbe(r))
}

// docProbe creates the document p1.
func docProbe(t *testing.T, docs *mongo.Documents[item]) tenancytest.Probe {
	q := document.Query{Filters: []document.Filter{{Field: "name", Op: document.Eq, Value: "probe"}}}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { _, err := docs.Create(ctx, "p1", item{"probe", 1}); return err },
		Read: func(ctx context.Context) (bool, error) {
			_, err := docs.Get(ctx, "p1")
			if errors.Is(err, document.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
		Intact: func(ctx context.Context) (bool, error) {
			r, err := docs.Get(ctx, "p1")
			return r.Value == item{"probe", 1} && r.Version == 1, err
		},
		RecordID: "p1",
		List: func(ctx context.Context) ([]string, error) {
			recs, err := docs.List(ctx, document.Query{})
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.ID)
			}
			return ids, err
		},
		Count: func(ctx context.Context) (int, error) { return docs.Count(ctx, q) },
		Update: func(ctx context.Context) error {
			_, err := docs.Update(ctx, "p1", item{"stolen", 2}, 1)
			requireNotFound(t, "update", err)
			return err
		},
		Delete: func(ctx context.Context) error {
			err := docs.Delete(ctx, "p1")
			requireNotFound(t, "delete", err)
			return err
		},
	}
}

// searchProbe indexes p1 as "red apple pie".
func searchProbe(t *testing.T, s *mongo.Search) tenancytest.Probe {
	ids := func(ctx context.Context) ([]string, error) {
		hits, err := s.Search(ctx, "Apple", 0)
		var out []string
		for _, h := range hits {
			out = append(out, h.ID)
		}
		return out, err
	}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { return s.Put(ctx, "p1", "red apple pie") },
		Read: func(ctx context.Context) (bool, error) {
			got, err := ids(ctx)
			return slices.Contains(got, "p1"), err
		},
		RecordID: "p1",
		List:     ids,
		Search:   func(ctx context.Context) (int, error) { return s.Count(ctx, "apple pie") },
		Delete: func(ctx context.Context) error {
			err := s.Remove(ctx, "p1")
			requireNotFound(t, "remove", err)
			return err
		},
	}
}

// counterProbe adds 5 to the counter p1.
func counterProbe(c *mongo.Counter) tenancytest.Probe {
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { _, err := c.Add(ctx, "p1", 5); return err },
		Read: func(ctx context.Context) (bool, error) {
			n, err := c.Get(ctx, "p1")
			return n != 0, err
		},
		Intact: func(ctx context.Context) (bool, error) {
			n, err := c.Get(ctx, "p1")
			return n == 5, err
		},
		Delete: func(ctx context.Context) error {
			if deleted, err := c.Delete(ctx, "p1"); err != nil || deleted {
				return err
			}
			return document.ErrNotFound
		},
	}
}

// outboxProbe adds the event evt-1.
func outboxProbe(t *testing.T, o *mongo.Outbox) tenancytest.Probe {
	pending := func(ctx context.Context) ([]string, error) {
		msgs, err := o.Pending(ctx, 0)
		var ids []string
		for _, m := range msgs {
			ids = append(ids, m.EventID)
		}
		return ids, err
	}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error {
			err := o.Write(ctx, outbox.Message{EventID: "evt-1", Topic: "orders", Payload: []byte("x")})
			return err
		},
		Read: func(ctx context.Context) (bool, error) {
			ids, err := pending(ctx)
			return slices.Contains(ids, "evt-1"), err
		},
		RecordID: "evt-1",
		List:     pending,
		Update: func(ctx context.Context) error {
			err := o.MarkDelivered(ctx, "evt-1")
			requireNotFound(t, "mark delivered", err)
			return err
		},
	}
}

// rawProbe inserts the document p1 through the raw hatch.
func rawProbe(r *mongo.RawFilter) tenancytest.Probe {
	find := func(ctx context.Context) ([]string, error) {
		docs, err := r.Find(ctx, bson.D{}, 0)
		var ids []string
		for _, d := range docs {
			ids = append(ids, d.Lookup("_id").StringValue())
		}
		return ids, err
	}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error {
			return r.Insert(ctx, bson.D{{Key: "_id", Value: "p1"}, {Key: "x", Value: 1}})
		},
		Read: func(ctx context.Context) (bool, error) {
			docs, err := r.Find(ctx, bson.D{{Key: "x", Value: bson.D{{Key: "$gte", Value: 1}}}}, 0)
			return len(docs) > 0, err
		},
		RecordID: "p1",
		List:     find,
	}
}
