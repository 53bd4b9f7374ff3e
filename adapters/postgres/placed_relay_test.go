package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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

// deliveries records what a relay delivered, per tenant and event, and
// refuses every delivery while down.
type deliveries struct {
	mu   sync.Mutex
	got  map[string]int // "<tenant>/<event>" -> times delivered
	down atomic.Bool
}

func (d *deliveries) Deliver(ctx context.Context, m outbox.Message) error {
	if d.down.Load() {
		return errors.New("destination down")
	}
	if id, _ := tenancy.FromContext(ctx); id != m.Tenant {
		return fmt.Errorf("delivered %s's event %s under %s", m.Tenant, m.EventID, id)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got[m.Tenant.Hex()+"/"+m.EventID]++
	return nil
}

// await waits until every event of want is delivered, then returns the
// events delivered more than once.
func (d *deliveries) await(t *testing.T, want []string) (twice []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d.mu.Lock()
		var missing []string
		for _, k := range want {
			if d.got[k] == 0 {
				missing = append(missing, k)
			}
		}
		twice = twice[:0]
		for k, n := range d.got {
			if n > 1 {
				twice = append(twice, k)
			}
		}
		d.mu.Unlock()
		if len(missing) == 0 {
			return twice
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events never delivered, e.g. %s", len(missing), missing[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

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
	ctxA, ctxB := tenancy.WithTenant(context.Background(), a), tenancy.WithTenant(context.Background(), b)
	set := func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{a, b}, nil }
	fast := shards.WorkerConfig{Tenants: set, Refresh: 50 * time.Millisecond, Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	sink, audited := &deliveries{got: map[string]int{}}, &deliveries{got: map[string]int{}}
	resolve := resolverOf(map[tenancy.ID]routing.Credentials{a: {Endpoint: dsns[0]}})
	orders := postgres.Module("orders",
		postgres.Connect(testsvc.PostgresURL(t)),
		postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 2}}),
		postgres.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}),
		postgres.SchemaPrefix("tw"+run+"_"), postgres.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.PerTenant("pr" + run)}),
		postgres.OutboxRoute("events", postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("pr" + run + "_ev")}),
		postgres.Relay("events", postgres.RelayConfig{Destination: sink, WorkerConfig: fast, Idle: 10 * time.Millisecond}),
		postgres.Sweep("events", postgres.SweepConfig{WorkerConfig: fast}),
	)
	audit := postgres.Module("audit", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("ta"+run+"_"), postgres.AllowTeardown(),
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

	var want, wantAudit []string
	write := func(ctx context.Context, o *postgres.Outbox, list *[]string, tag string) {
		t.Helper()
		id, _ := tenancy.FromContext(ctx)
		for i := range 3 {
			ev := fmt.Sprintf("%s-%d", tag, i)
			if err := o.Write(ctx, outbox.Message{EventID: ev, Topic: "t"}); err != nil {
				t.Fatalf("writing %s for %s: %v", ev, id, err)
			}
			*list = append(*list, id.Hex()+"/"+ev)
		}
	}
	from := tenancy.Tagged
	for _, to := range []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated, tenancy.Tagged} {
		write(ctxA, events, &want, "a-"+to.String()+"-live")
		sink.await(t, want)
		sink.down.Store(true)
		write(ctxA, events, &want, "a-"+to.String()+"-waiting")
		write(ctxB, events, &want, "b-"+to.String())
		write(ctxA, trail, &wantAudit, "audit-"+to.String())
		moveCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rep, err := tenants.Move(moveCtx, a, "orders", to, modules.MoveOptions{})
		cancel()
		if err != nil {
			t.Fatalf("move %s → %s: %v", from, to, err)
		}
		t.Logf("moved %s → %s: %d records, writes fenced %v", from, to, rep.Records, rep.Fenced)
		// The old copy still holds the waiting rows, undelivered, until
		// the cleanup: only the new placement's relay may deliver them.
		sink.down.Store(false)
		write(ctxA, events, &want, "a-"+to.String()+"-after")
		sink.await(t, want)
		time.Sleep(200 * time.Millisecond) // passes of a relay that should not serve A
		if twice := sink.await(t, want); len(twice) > 0 {
			t.Fatalf("after the move to %s, %d events were delivered twice, e.g. %s", to, len(twice), twice[0])
		}
		audited.await(t, wantAudit)
		if _, err := tenants.CleanupMove(context.Background(), a, "orders", from); err != nil {
			t.Fatalf("cleaning up %s: %v", from, err)
		}
		from = to
	}
}
