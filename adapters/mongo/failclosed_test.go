package mongo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// routes holds one route of every kind. The client points at a closed
// port: every call below must fail before any server is needed.
type routes struct {
	docs    *mongo.Documents[order]
	search  *mongo.Search
	counter *mongo.Counter
	outbox  *mongo.Outbox
	raw     *mongo.RawFilter
	prov    *mongo.Provisioner
}

func build(t *testing.T, source mongo.Option, cfg mongo.RouteConfig, withRaw bool) routes {
	t.Helper()
	var r routes
	opts := []mongo.Option{source, mongo.Database("app"),
		mongo.Document[order]("docs", cfg), mongo.SearchRoute("search", cfg),
		mongo.CounterRoute("counter", cfg), mongo.OutboxRoute("outbox", cfg)}
	populate := []fx.Option{fx.Populate(&r.docs), named("m", &r.prov),
		fx.Invoke(fx.Annotate(func(s *mongo.Search, c *mongo.Counter, o *mongo.Outbox) {
			r.search, r.counter, r.outbox = s, c, o
		}, fx.ParamTags(`name:"search"`, `name:"counter"`, `name:"outbox"`)))}
	// Below dedicated the raw hatch is refused at fx.New (tested in
	// wiring_test.go), so only a routed module carries it here.
	if withRaw {
		opts = append(opts, mongo.RawFilterRoute("raw", cfg))
		populate = append(populate, named("raw", &r.raw))
	}
	if err := fx.New(append([]fx.Option{fx.NopLogger, mongo.Module("m", opts...)}, populate...)...).Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

func deadClient(t *testing.T) mongo.Option {
	c, err := driver.Connect(options.Client().ApplyURI("mongodb://127.0.0.1:1").SetServerSelectionTimeout(300 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return mongo.Use(c)
}

// calls are every tenant-scoped operation of every route kind.
func calls(r routes) map[string]func(context.Context) error {
	m := map[string]func(context.Context) error{
		"get":     func(ctx context.Context) error { _, err := r.docs.Get(ctx, "x"); return err },
		"create":  func(ctx context.Context) error { _, err := r.docs.Create(ctx, "x", order{}); return err },
		"update":  func(ctx context.Context) error { _, err := r.docs.Update(ctx, "x", order{}, 1); return err },
		"delete":  func(ctx context.Context) error { return r.docs.Delete(ctx, "x") },
		"list":    func(ctx context.Context) error { _, err := r.docs.List(ctx, document.Query{}); return err },
		"count":   func(ctx context.Context) error { _, err := r.docs.Count(ctx, document.Query{}); return err },
		"put":     func(ctx context.Context) error { return r.search.Put(ctx, "x", "a") },
		"query":   func(ctx context.Context) error { _, err := r.search.Search(ctx, "a", 0); return err },
		"scount":  func(ctx context.Context) error { _, err := r.search.Count(ctx, "a"); return err },
		"remove":  func(ctx context.Context) error { return r.search.Remove(ctx, "x") },
		"add":     func(ctx context.Context) error { _, err := r.counter.Add(ctx, "x", 1); return err },
		"cget":    func(ctx context.Context) error { _, err := r.counter.Get(ctx, "x"); return err },
		"cdelete": func(ctx context.Context) error { _, err := r.counter.Delete(ctx, "x"); return err },
		"enqueue": func(ctx context.Context) error {
			err := r.outbox.Write(ctx, outbox.Message{Topic: "t"})
			return err
		},
		"pending": func(ctx context.Context) error { _, err := r.outbox.Pending(ctx, 1); return err },
		"mark":    func(ctx context.Context) error { return r.outbox.MarkDelivered(ctx, "e") },
	}
	if r.raw != nil {
		m["raw"] = func(ctx context.Context) error { _, err := r.raw.Find(ctx, bson.D{}, 0); return err }
	}
	return m
}

// Fail closed: no tenant bound is an error on every scoped route, never the
// default tenant.
func TestNoTenantFailsClosed(t *testing.T) {
	for name, src := range map[string]func(*testing.T) (mongo.Option, mongo.RouteConfig){
		"tagged": func(t *testing.T) (mongo.Option, mongo.RouteConfig) {
			return deadClient(t), mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("c")}
		},
		"namespace": func(t *testing.T) (mongo.Option, mongo.RouteConfig) {
			return deadClient(t), mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("c")}
		},
		"dedicated": func(*testing.T) (mongo.Option, mongo.RouteConfig) {
			return routed, mongo.RouteConfig{Collection: naming.Shared("c")}
		},
	} {
		t.Run(name, func(t *testing.T) {
			src, cfg := src(t)
			r := build(t, src, cfg, name == "dedicated")
			for op, call := range calls(r) {
				err := call(context.Background())
				if !errors.Is(err, tenancy.CodeTenantUnbound) {
					t.Errorf("%s with no tenant: %v, want tenant_unbound", op, err)
				}
				var e *tenancy.Error
				if errors.As(err, &e) && (e.Module != "m" || e.Backend != "mongodb" || e.Route == "") {
					t.Errorf("%s: refusal names %q/%q/%q", op, e.Module, e.Backend, e.Route)
				}
			}
			if err := r.prov.Provision(context.Background(), tenancy.ID{}); !errors.Is(err, tenancy.CodeTenantUnbound) {
				t.Errorf("provision of the zero tenant: %v", err)
			}
		})
	}
}

// Fail closed: a credential resolver error is returned, and no shared
// client is used instead, by calls and by the erasure check alike.
func TestResolverErrorFailsClosed(t *testing.T) {
	boom := errors.New("vault unreachable")
	calls0 := 0
	src := mongo.Routed(func(context.Context, tenancy.ID) (routing.Credentials, error) {
		calls0++
		return routing.Credentials{}, boom
	}, mongo.RoutedConfig{})
	r := build(t, src, mongo.RouteConfig{Collection: naming.Shared("c")}, true)
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	for op, call := range calls(r) {
		if err := call(ctx); !errors.Is(err, boom) {
			t.Errorf("%s: %v, want the resolver's error", op, err)
		}
	}
	if calls0 == 0 {
		t.Fatal("the resolver was never asked")
	}
	// The erasure check too: a tenant whose database it cannot reach is
	// not reported erased.
	if e, err := r.prov.Verify(context.Background(), tenancytest.TenantA); !errors.Is(err, boom) {
		t.Errorf("verify: %+v %v, want the resolver's error", e, err)
	}
}

// An unscoped outbox takes deployment-wide rows only under the explicit
// global scope; a tenant-aware one reads every tenant's rows only there.
func TestOutboxNeedsTenantOrGlobal(t *testing.T) {
	r := build(t, deadClient(t), mongo.RouteConfig{Collection: naming.Shared("c")}, false)
	if err := r.outbox.Write(context.Background(), outbox.Message{}); !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Fatalf("unbound add: %v", err)
	}
}

func TestTeardownDisabledByDefault(t *testing.T) {
	r := build(t, deadClient(t), mongo.RouteConfig{Collection: naming.PerTenant("c")}, false)
	if err := r.prov.Teardown(context.Background(), tenancytest.TenantA); !errors.Is(err, migrate.ErrTeardownDisabled) {
		t.Fatalf("teardown: %v", err)
	}
}

func named[T any](name string, dst *T) fx.Option {
	return fx.Invoke(fx.Annotate(func(v T) { *dst = v }, fx.ParamTags(`name:"`+name+`"`)))
}
