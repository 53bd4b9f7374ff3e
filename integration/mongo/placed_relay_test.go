package mongo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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

// sink counts deliveries per tenant and event, refusing all while down.
type sink struct {
	mu   sync.Mutex
	got  map[string]int
	down atomic.Bool
}

func (s *sink) Deliver(ctx context.Context, m outbox.Message) error {
	if s.down.Load() {
		return errors.New("destination down")
	}
	if id, _ := tenancy.FromContext(ctx); id != m.Tenant {
		return fmt.Errorf("delivered %s's event under %s", m.Tenant, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got[m.Tenant.Hex()+"/"+m.EventID]++
	return nil
}

// awaitAll waits for every event of want, then returns those delivered
// more than once.
func (s *sink) awaitAll(t *testing.T, want []string) []string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s.mu.Lock()
		missing := 0
		for _, k := range want {
			if s.got[k] == 0 {
				missing++
			}
		}
		var twice []string
		for k, n := range s.got {
			if n > 1 {
				twice = append(twice, k)
			}
		}
		s.mu.Unlock()
		if missing == 0 {
			return twice
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events never delivered", missing, len(want))
		}
	}
}

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
	out := &sink{got: map[string]int{}}
	fast := shards.WorkerConfig{Refresh: 50 * time.Millisecond, Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Tenants: func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{a, b}, nil }}
	var r struct {
		fx.In
		Tenants *modules.Tenants
		Events  *mongo.Outbox `name:"events"`
	}
	start(t, modules.Lifecycle(), mongo.Module("orders", mongo.Connect(uriA), mongo.Database(db),
		mongo.Routed(resolve, mongo.RoutedConfig{}), mongo.AllowTeardown(),
		mongo.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}),
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
	var want []string
	write := func(id tenancy.ID, tag string) {
		t.Helper()
		for i := range 3 {
			ev := fmt.Sprintf("%s-%d", tag, i)
			if err := r.Events.Write(tenancy.WithTenant(ctx, id), outbox.Message{EventID: ev, Topic: "t"}); err != nil {
				t.Fatalf("writing %s: %v", ev, err)
			}
			want = append(want, id.Hex()+"/"+ev)
		}
	}
	from := tenancy.Tagged
	for _, to := range []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated, tenancy.Tagged} {
		write(a, "live-"+to.String())
		out.awaitAll(t, want)
		out.down.Store(true)
		write(a, "waiting-"+to.String())
		write(b, "b-"+to.String())
		mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := r.Tenants.Move(mctx, a, "orders", to, modules.MoveOptions{})
		cancel()
		if err != nil {
			t.Fatalf("move %s → %s: %v", from, to, err)
		}
		out.down.Store(false)
		write(a, "after-"+to.String())
		out.awaitAll(t, want)
		time.Sleep(200 * time.Millisecond) // passes of a relay that should not serve A
		if twice := out.awaitAll(t, want); len(twice) > 0 {
			t.Fatalf("after the move to %s, %d events were delivered twice, e.g. %s", to, len(twice), twice[0])
		}
		if _, err := r.Tenants.CleanupMove(ctx, a, "orders", from); err != nil {
			t.Fatalf("cleaning up %s: %v", from, err)
		}
		from = to
	}
}
