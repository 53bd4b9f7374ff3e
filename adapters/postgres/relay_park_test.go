package postgres_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

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
// suspended tenant's rows once it is resumed, each once. The destination
// calls a route of the module, so the refusal is the lifecycle's own
// tenant_suspended.
func TestRelayParksASuspendedTenant(t *testing.T) {
	run := unique()
	s := newSink()
	var (
		d       *postgres.Documents[item]
		o       *postgres.Outbox
		tenants *modules.Tenants
	)
	dest := outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error {
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

	// Usual latency: the slowest of three rounds with nothing parked.
	var usual time.Duration
	for range 3 {
		begin := time.Now()
		s.waitAll(t, keys(fill(t, o, 10, others...)), 10*time.Second)
		usual = max(usual, time.Since(begin))
	}

	parked := fill(t, o, 3*rc.BatchSize, a)
	tenants.Suspend(a)
	begin := time.Now()
	s.waitAll(t, keys(fill(t, o, 10, others...)), 10*time.Second)
	if took := time.Since(begin); took > 2*usual {
		t.Errorf("with a suspended tenant at the head, other tenants' rows took %v; usually %v", took, usual)
	}
	s.mu.Lock()
	for ev := range parked {
		if s.count[ev] != 0 {
			t.Errorf("a suspended tenant's row %s was delivered", ev)
		}
	}
	s.mu.Unlock()
	tenants.Resume(a)
	s.waitAll(t, keys(parked), 10*time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	for ev, n := range s.count {
		if n != 1 {
			t.Errorf("%s delivered %d times", ev, n)
		}
	}
}
