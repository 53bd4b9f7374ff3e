package mongo_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestPlacedRelayMongo, on FerretDB: a module with placements runs its
// relay on each placement, over that placement's outbox, for the tenants
// placed there. A is moved tagged → namespace → dedicated → tagged with
// events waiting undelivered at each move: every event is delivered
// exactly once, from A's placement (the old copy's rows, still
// undelivered there until the cleanup, are never relayed), and events
// written after each move are delivered.
func TestPlacedRelayMongo(t *testing.T) {
	db := freshName()
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	dedicated := db + "_d" + a.Hex()[24:]
	rawA, rawB := client(t, uriA), client(t, uriB)
	t.Cleanup(func() {
		_ = rawA.Database(db).Drop(context.Background())
		_ = rawB.Database(dedicated).Drop(context.Background())
	})
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: uriB, Params: map[string]string{"database": db + "_d" + id.Hex()[24:]}}, nil
	}
	out := &tenancytest.Deliveries{}
	fast := shards.WorkerConfig{Refresh: 50 * time.Millisecond, Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Tenants: func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{a, b}, nil }}
	var r struct {
		fx.In
		Tenants *modules.Tenants
		Events  *mongo.Outbox `name:"events"`
	}
	start(t, modules.Lifecycle(), mongo.Module("orders", mongo.Connect(uriA), mongo.Database(db),
		mongo.Routed(resolve, mongo.RoutedConfig{}), modules.AllowTeardown(),
		modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}),
		mongo.Document[order]("orders", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("ord")}),
		mongo.OutboxRoute("events", mongo.RouteConfig{TenantAware: true, Collection: naming.PerTenant("ev")}),
		mongo.Relay("events", outbox.RelayConfig{Destination: out, WorkerConfig: fast, Idle: 10 * time.Millisecond})),
		fx.Populate(&r))
	r.Tenants.Place(b, "orders", tenancy.Namespace)
	ctx := context.Background()
	for _, id := range []tenancy.ID{a, b} {
		if _, err := r.Tenants.Provision(ctx, id); err != nil {
			t.Fatalf("provisioning %s: %v", id, err)
		}
	}
	tenancytest.CheckRelayFollowsMove(t, tenancytest.RelayMove{Tenants: r.Tenants, Module: "orders", A: a, B: b, Sink: out,
		Write: func(ctx context.Context, event string) error {
			return r.Events.Write(ctx, outbox.Message{EventID: event, Topic: "t"})
		}})
}
