package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestPlacedRelayFollowsTheMove: a module with placements runs its relay
// on each placement, over that placement's outbox, for the tenants placed
// there. Tenant A is moved tagged → namespace → dedicated → tagged with
// events waiting undelivered (the destination down) at each move: each
// event is delivered exactly once, from the placement A is at (the old
// copy's rows, still undelivered there, are never relayed), events
// written after each move are delivered, B's are delivered throughout,
// nothing is delivered twice before the old copy is cleaned up,
// and a relay of another module that serves A does not hold the moves up.
func TestPlacedRelayFollowsTheMove(t *testing.T) {
	_, dsns := databases(t, 1, "")
	run := unique()
	a, b := tenancytest.TenantA, tenancytest.TenantB
	ctxA := tenancy.WithTenant(context.Background(), a)
	set := func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{a, b}, nil }
	fast := shards.WorkerConfig{Tenants: set, Refresh: 50 * time.Millisecond, Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	sink, audited := &tenancytest.Deliveries{}, &tenancytest.Deliveries{}
	resolve := resolverOf(map[tenancy.ID]routing.Credentials{a: {Endpoint: dsns[0]}})
	orders := postgres.Module("orders",
		postgres.Connect(testsvc.PostgresURL(t)),
		postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 2}}),
		modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}),
		postgres.SchemaPrefix("tw"+run+"_"), modules.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.PerTenant("pr" + run)}),
		postgres.OutboxRoute("events", postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("pr" + run + "_ev")}),
		postgres.Relay("events", postgres.RelayConfig{Destination: sink, WorkerConfig: fast, Idle: 10 * time.Millisecond}),
		postgres.Sweep("events", postgres.SweepConfig{WorkerConfig: fast}),
	)
	audit := postgres.Module("audit", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("ta"+run+"_"), modules.AllowTeardown(),
		postgres.OutboxRoute("audit", postgres.OutboxConfig{TenantAware: true, Table: naming.Shared("au" + run)}),
		postgres.Relay("audit", postgres.RelayConfig{Destination: audited, WorkerConfig: fast, Idle: 10 * time.Millisecond}))
	var (
		tenants *modules.Tenants
		events  *postgres.Outbox
		trail   *postgres.Outbox
	)
	app := fx.New(fx.NopLogger, modules.Lifecycle(), orders, audit, fx.Populate(&tenants), named("events", &events), named("audit", &trail))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	tenants.Place(b, "orders", tenancy.Namespace)
	for _, id := range []tenancy.ID{a, b} {
		if _, err := tenants.Provision(context.Background(), id); err != nil {
			t.Fatalf("provisioning %s: %v", id, err)
		}
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })

	var wantAudit []string
	tenancytest.CheckRelayFollowsMove(t, tenancytest.RelayMove{Tenants: tenants, Module: "orders", A: a, B: b, Sink: sink,
		Write: func(ctx context.Context, event string) error {
			return events.Write(ctx, outbox.Message{EventID: event, Topic: "t"})
		},
		// A relay of another module serves A throughout: the moves do not
		// wait for it, and its events are delivered.
		Before: func(to tenancy.Tier) {
			for i := range 3 {
				ev := fmt.Sprintf("audit-%s-%d", to, i)
				if err := trail.Write(ctxA, outbox.Message{EventID: ev, Topic: "t"}); err != nil {
					t.Fatal(err)
				}
				wantAudit = append(wantAudit, tenancytest.DeliveryKey(a, ev))
			}
		},
		After: func(tenancy.Tier, tenancy.Tier) { audited.Await(t, wantAudit) },
	})
}
