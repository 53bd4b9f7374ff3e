package postgres_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRelayParksASuspendedTenant: on a tenant-global outbox whose oldest
// rows (three batches of them) are a suspended tenant's, every other
// tenant's rows are delivered within twice their usual latency, and the
// suspended tenant's rows once it is resumed, each once (the kit's
// fairness check, tenancytest.Fair). The destination
// calls a route of the module, so the refusal is the lifecycle's own
// tenant_suspended.
func TestRelayParksASuspendedTenant(t *testing.T) {
	run := unique()
	s := newSink()
	var (
		d       *postgres.Documents[item]
		o       *postgres.Outbox
		tenants *modules.Tenants
		// hold keeps deliveries waiting while A's rows are written and A
		// is suspended, so none of them can go out before the suspension.
		hold sync.RWMutex
	)
	dest := outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error {
		hold.RLock()
		hold.RUnlock() //nolint:staticcheck // a barrier, not a critical section
		if _, err := d.Count(ctx, document.Query{}); err != nil {
			return err
		}
		return s.Deliver(ctx, m)
	})
	rc := fast(dest)
	rc.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	a, others := tenancytest.TenantA, []tenancy.ID{tenancytest.TenantB, tenantC}
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("pdocs_" + run)}),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("park_" + run)}),
		postgres.Relay("out", rc)), modules.Lifecycle(), named("out", &o), named("docs", &d), fx.Populate(&tenants))
	provision(t, c, three...)
	startApp(t, app)

	tenancytest.Fair(t, tenancytest.Worker{
		Enqueue: func(_ context.Context, n int) ([]string, error) { return keys(fill(t, o, n, others...)), nil },
		Park: func(context.Context) ([]string, error) {
			hold.Lock()
			defer hold.Unlock()
			parked := fill(t, o, 3*rc.BatchSize, a)
			tenants.Suspend(a)
			return keys(parked), nil
		},
		Restore:   func(context.Context) error { tenants.Resume(a); return nil },
		Delivered: s.times,
	})
}

// TestClaimSkippingLeavesParkedTenantsOut, directly and through PgBouncer:
// the claim a relay makes while tenants are parked returns none of their
// rows, even when they are the oldest and fill more than a batch, and
// leaves the deployment-wide rows out when the zero ID is parked; with
// none parked, each tenant has its share of the batch.
func TestClaimSkippingLeavesParkedTenantsOut(t *testing.T) {
	for name, v := range map[string]via{"direct": direct, "pgbouncer": throughPgBouncer} {
		t.Run(name, func(t *testing.T) {
			var o *postgres.Outbox
			_, c := build(t, postgres.Module("pg", append(v.dsn(t),
				postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("skip_" + unique())}))...), named("out", &o))
			provision(t, c, tenancytest.TenantA)
			a, b := tenancytest.TenantA, tenancytest.TenantB
			parked := fill(t, o, 12, a)
			others := fill(t, o, 3, b)
			if err := o.Write(tenancy.WithGlobal(context.Background()), outbox.Message{EventID: "g", Topic: "t"}); err != nil {
				t.Fatal(err)
			}
			claim := func(skip ...tenancy.ID) map[string]bool {
				batch, err := o.ClaimSkipping(context.Background(), 10, skip)
				if err != nil {
					t.Fatal(err)
				}
				defer batch.Abandon(context.Background())
				got := map[string]bool{}
				for _, m := range batch.Messages() {
					got[m.EventID] = true
				}
				return got
			}
			got := claim(a)
			if len(got) != 4 || !got["g"] {
				t.Fatalf("skipping A: %v", got)
			}
			for ev := range others {
				if !got[ev] {
					t.Errorf("B's %s left out", ev)
				}
			}
			if got := claim(a, tenancy.ID{}); len(got) != 3 || got["g"] {
				t.Errorf("skipping A and the deployment-wide rows: %v", got)
			}
			// Skipping none, every tenant gets its share of the batch in
			// turn: A's twelve oldest rows do not fill it ahead of B's and
			// the deployment-wide one.
			got = claim()
			n := 0
			for ev := range parked {
				if got[ev] {
					n++
				}
			}
			if n != 4 || !got["g"] || len(got) != 8 {
				t.Errorf("skipping none: %d of A's rows (want its share, 4 of 10) in %v", n, got)
			}
			for ev := range others {
				if !got[ev] {
					t.Errorf("skipping none: B's %s left out", ev)
				}
			}
		})
	}
}
