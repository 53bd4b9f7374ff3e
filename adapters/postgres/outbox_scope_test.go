package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

var (
	bgA = tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	bgB = tenancy.WithTenant(context.Background(), tenancytest.TenantB)
)

// claimAll claims under ctx and returns the batch with its messages keyed
// by tenant. A batch the test leaves open is abandoned before the app
// stops, so its connection returns to the pool.
func claimAll(t *testing.T, o *postgres.Outbox, ctx context.Context) (outbox.Batch, map[tenancy.ID][]outbox.Message) {
	t.Helper()
	b, err := o.Claim(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Abandon(context.Background()) })
	out := map[tenancy.ID][]outbox.Message{}
	for _, m := range b.Messages() {
		out[m.Tenant] = append(out[m.Tenant], m)
	}
	return b, out
}

// TestOutboxEventIDsPerTenant: two tenants use the same event id on every
// outbox shape; both writes succeed (neither can take the id first or learn
// that the other used it), each claims only its own row, and completing
// one tenant's row leaves the other's pending.
func TestOutboxEventIDsPerTenant(t *testing.T) {
	url := testsvc.PostgresURL(t)
	for name, oc := range map[string]func(run string) postgres.OutboxConfig{
		"tenant-global": func(run string) postgres.OutboxConfig {
			return postgres.OutboxConfig{Table: naming.Shared("ev_" + run)}
		},
		"tagged": func(run string) postgres.OutboxConfig {
			return postgres.OutboxConfig{TenantAware: true, Table: naming.Shared("ev_" + run)}
		},
		"namespace": func(string) postgres.OutboxConfig {
			return postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("ev")}
		},
	} {
		t.Run(name, func(t *testing.T) {
			run := unique()
			var o *postgres.Outbox
			c := start(t, postgres.Module("pg", postgres.Connect(url), postgres.SchemaPrefix("tw"+run+"_"),
				postgres.OutboxRoute("out", oc(run))), named("out", &o))
			provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
			if err := o.Write(bgA, outbox.Message{EventID: "e1", Topic: "t", Payload: []byte("a")}); err != nil {
				t.Fatal(err)
			}
			if err := o.Write(bgB, outbox.Message{EventID: "e1", Topic: "t", Payload: []byte("b")}); err != nil {
				t.Fatalf("B refused an event id A had used: %v", err)
			}
			if err := o.Write(bgA, outbox.Message{EventID: "e1", Topic: "t"}); err == nil {
				t.Error("A wrote its own event id twice")
			}
			for _, tc := range []struct {
				ctx  context.Context
				who  tenancy.ID
				body string
			}{{bgA, tenancytest.TenantA, "a"}, {bgB, tenancytest.TenantB, "b"}} {
				b, got := claimAll(t, o, tc.ctx)
				if len(b.Messages()) != 1 || len(got[tc.who]) != 1 || string(got[tc.who][0].Payload) != tc.body {
					t.Errorf("%s claimed %+v", tc.who, b.Messages())
				}
				b.Abandon(context.Background())
			}
			// One batch holding both rows (an unbound claim of the
			// tenant-global outbox) or A's own: completing A's e1 must
			// leave B's pending.
			ctx := bgA
			if name == "tenant-global" {
				ctx = context.Background()
			}
			b, got := claimAll(t, o, ctx)
			if len(got[tenancytest.TenantA]) != 1 {
				t.Fatalf("claim: %+v", b.Messages())
			}
			if err := b.Complete(context.Background(), got[tenancytest.TenantA]); err != nil {
				t.Fatal(err)
			}
			if b, got := claimAll(t, o, bgB); len(got[tenancytest.TenantB]) != 1 {
				t.Errorf("completing A's e1 completed B's: %+v", b.Messages())
			}
			if b, _ := claimAll(t, o, bgA); len(b.Messages()) != 0 {
				t.Errorf("A's e1 still pending: %+v", b.Messages())
			}
		})
	}
}

// TestOutboxUpgradeScopesEventIDs: a table an older Provision created with
// UNIQUE (event_id) is upgraded by the next Provision, keeping its rows.
func TestOutboxUpgradeScopesEventIDs(t *testing.T) {
	run := unique()
	table := "old_" + run
	conn := superuser(t)
	exec(t, conn, "CREATE TABLE "+table+" (id bigserial PRIMARY KEY, tenant_id uuid NOT NULL, "+
		"event_id text NOT NULL UNIQUE, topic text NOT NULL, key bytea, payload bytea, headers jsonb, "+
		"created_at timestamptz NOT NULL DEFAULT now(), delivered_at timestamptz)")
	exec(t, conn, "INSERT INTO "+table+" (tenant_id, event_id, topic) VALUES ($1, 'e0', 't')", tenancytest.TenantA.String())
	var o *postgres.Outbox
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared(table)})), named("out", &o))
	provision(t, c, tenancytest.TenantA)
	provision(t, c, tenancytest.TenantB) // idempotent on an upgraded table
	if err := o.Write(bgB, outbox.Message{EventID: "e0", Topic: "t"}); err != nil {
		t.Fatalf("B refused an event id A had used, after the upgrade: %v", err)
	}
	if err := o.Write(bgA, outbox.Message{EventID: "e0", Topic: "t"}); err == nil {
		t.Error("the upgrade lost uniqueness per tenant")
	}
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 2 {
		t.Errorf("rows after the upgrade: %d %v", n, err)
	}
}

// TestScopedOutboxRefusesUnbound: a tenant-scoped outbox (tenant-aware,
// per-tenant or routed) refuses a write with no tenant bound, and under the
// tenant-global scope, with tenant_unbound, and stores nothing.
func TestScopedOutboxRefusesUnbound(t *testing.T) {
	run := unique()
	var tagged, ns, routed *postgres.Outbox
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"),
		postgres.OutboxRoute("tagged", postgres.OutboxConfig{TenantAware: true, Table: naming.Shared("su_" + run)}),
		postgres.OutboxRoute("ns", postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("su")}),
	), named("tagged", &tagged), named("ns", &ns))
	provision(t, c, tenancytest.TenantA)
	// A routed client scopes even a tenant-global table.
	cr := start(t, postgres.Module("pg", postgres.Routed(twoDatabases(t), postgres.RoutedConfig{}),
		postgres.OutboxRoute("routed", postgres.OutboxConfig{Table: naming.Shared("su")})), named("routed", &routed))
	provision(t, cr, tenancytest.TenantA)
	for name, o := range map[string]*postgres.Outbox{"tagged": tagged, "namespace": ns, "dedicated": routed} {
		for scope, ctx := range map[string]context.Context{"unbound": context.Background(), "global": tenancy.WithGlobal(context.Background())} {
			if err := o.Write(ctx, outbox.Message{EventID: "x", Topic: "t"}); !errors.Is(err, tenancy.CodeTenantUnbound) {
				t.Errorf("%s, %s write: %v, want tenant_unbound", name, scope, err)
			}
			if _, err := o.Claim(ctx, 1); !errors.Is(err, tenancy.CodeTenantUnbound) {
				t.Errorf("%s, %s claim: %v, want tenant_unbound", name, scope, err)
			}
		}
		if b, _ := claimAll(t, o, bgA); len(b.Messages()) != 0 {
			t.Errorf("%s: a refused write stored %+v", name, b.Messages())
		}
	}
}

// TestOutboxShardedSweep: a sharded sweep deletes the delivered rows of
// its assigned tenants only; an unassigned tenant's delivered rows stay.
func TestOutboxShardedSweep(t *testing.T) {
	run := unique()
	table := "ss_" + run
	var o *postgres.Outbox
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared(table)}),
		postgres.Sweep("out", postgres.SweepConfig{Retain: time.Millisecond, Every: 20 * time.Millisecond,
			WorkerConfig: shards.WorkerConfig{Tenants: providing(tenancytest.TenantA)}})), named("out", &o))
	provision(t, c, tenancytest.TenantA)
	for _, ctx := range []context.Context{bgA, bgB} {
		if err := o.Write(ctx, outbox.Message{EventID: "done", Topic: "t"}, outbox.Message{EventID: "pending", Topic: "t"}); err != nil {
			t.Fatal(err)
		}
		b, _ := claimAll(t, o, ctx)
		var done []outbox.Message
		for _, m := range b.Messages() {
			if m.EventID == "done" {
				done = append(done, m)
			}
		}
		if err := b.Complete(context.Background(), done); err != nil || len(done) != 1 {
			t.Fatalf("complete %v: %v", done, err)
		}
	}
	startApp(t, app)
	conn := superuser(t)
	count := func(tenant tenancy.ID) (n int) {
		t.Helper()
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE tenant_id = $1", tenant.String()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(5 * time.Second)
	for count(tenancytest.TenantA) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the sweep left %d rows of its tenant, want its 1 pending row", count(tenancytest.TenantA))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // several more passes
	if n := count(tenancytest.TenantB); n != 2 {
		t.Errorf("the sweep of A touched B's rows: %d left of 2", n)
	}
	if count(tenancytest.TenantA) != 1 {
		t.Error("the sweep deleted an undelivered row")
	}
}
