package mongo_test

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// scopeCase is one route over a per-tenant collection and how a call
// writes through it.
type scopeCase struct {
	route func(name string) mongo.Option
	write func(ctx context.Context, name string, obj any) error
	// unbound is the context of the call made with no tenant bound.
	unbound context.Context
}

// probe builds the route under the current rules and reports its matrix
// row, the unbound call's error and the non-empty collections after one
// call bound to tenant A and the unbound one.
func (c scopeCase) probe(t *testing.T) (tenancy.Tier, []string, error) {
	t.Helper()
	opts, db := plainDB(t)
	var (
		m   floors.Matrix
		obj any
	)
	start(t, mongo.Module("m", append(opts, c.route("r"))...),
		fx.Invoke(func(l modules.Live) { m = l.Matrix() }),
		fx.Invoke(fx.Annotate(func(v *mongo.Counter) {
			if v != nil {
				obj = v
			}
		}, fx.ParamTags(`name:"r" optional:"true"`))),
		fx.Invoke(fx.Annotate(func(v *mongo.Outbox) {
			if v != nil {
				obj = v
			}
		}, fx.ParamTags(`name:"r" optional:"true"`))))
	if len(m.Rows) != 1 {
		t.Fatalf("matrix rows %+v", m.Rows)
	}
	if err := c.write(ctxOf(tenancytest.TenantA), "a1", obj); err != nil {
		t.Fatalf("bound call: %v", err)
	}
	unbound := c.write(c.unbound, "u1", obj)
	names, err := client(t, uriA).Database(db).ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return m.Rows[0].Reached, names, unbound
}

func counterCase() scopeCase {
	return scopeCase{
		route: func(name string) mongo.Option {
			return mongo.CounterRoute(name, mongo.RouteConfig{Collection: naming.PerTenant("hits")})
		},
		write: func(ctx context.Context, _ string, obj any) error {
			_, err := obj.(*mongo.Counter).Add(ctx, "n", 1)
			return err
		},
		unbound: context.Background()}
}

func outboxCase() scopeCase {
	return scopeCase{
		route: func(name string) mongo.Option {
			return mongo.OutboxRoute(name, mongo.RouteConfig{Collection: naming.PerTenant("hits")})
		},
		write: func(ctx context.Context, id string, obj any) error {
			return obj.(*mongo.Outbox).Write(ctx, outbox.Message{EventID: id, Topic: "t"})
		},
		unbound: tenancy.WithGlobal(context.Background())}
}

// TestScopeFollowsEachKindsRule: the two shipped values of "the resolver
// is passed the tenant only when tenant-aware" (off for the counter, on for
// the outbox) give the same per-tenant collection two matrix rows and two
// runtimes: the collection a call lands in, and whether an unbound call is
// refused. adapters/mongo's TestScopeFollowsRule flips each rule and shows
// the runtime moves with it.
func TestScopeFollowsEachKindsRule(t *testing.T) {
	perTenant := []string{mongo.CollectionName("hits", tenancytest.TenantA)}
	shared := []string{"hits"}
	check := func(t *testing.T, c scopeCase, wantTier tenancy.Tier, wantColls []string, refused bool) {
		t.Helper()
		reached, colls, unbound := c.probe(t)
		if reached != wantTier {
			t.Errorf("reached %s, want %s", reached, wantTier)
		}
		if !slices.Equal(colls, wantColls) {
			t.Errorf("rows landed in %v, want %v", colls, wantColls)
		}
		if refused {
			tenancytest.RequireUnbound(t, unbound, "m", "mongodb", "r")
		} else if unbound != nil {
			t.Errorf("unbound call refused: %v", unbound)
		}
	}
	t.Run("counter", func(t *testing.T) {
		check(t, counterCase(), tenancy.Namespace, perTenant, true)
	})
	t.Run("outbox", func(t *testing.T) {
		check(t, outboxCase(), tenancy.None, shared, false)
	})
}
