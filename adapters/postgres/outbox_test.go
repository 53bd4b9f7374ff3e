package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestOutboxWrites: rows join the caller's transaction; a write with no
// tenant bound fails closed; a deployment-wide row needs the explicit
// tenant-global scope and is delivered under it.
func TestOutboxWrites(t *testing.T) {
	run := unique()
	s := newSink()
	var o *postgres.Outbox
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("ow_" + run)}),
		postgres.Relay("out", fast(s))), named("out", &o))
	provision(t, c, tenancytest.TenantA)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	pool, release, err := c.Pool(ctxA)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	boom := errors.New("business rule failed")
	err = pgx.BeginFunc(ctxA, pool, func(tx pgx.Tx) error {
		if err := o.WriteTx(ctxA, tx, outbox.Message{EventID: "rolled-back", Topic: "t"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(ctxA, pool, func(tx pgx.Tx) error {
		return o.WriteTx(ctxA, tx, outbox.Message{EventID: "committed", Topic: "t"})
	}); err != nil {
		t.Fatal(err)
	}
	if err := o.Write(context.Background(), outbox.Message{EventID: "unbound"}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Errorf("unbound write: %v", err)
	}
	if err := o.Write(ctxA, outbox.Message{EventID: "foreign", Tenant: tenancytest.TenantB}); !errors.Is(err, tenancy.CodeForeignTenant) {
		t.Errorf("a row of tenant B written under tenant A: %v, want foreign_tenant", err)
	}
	if err := o.Write(tenancy.WithGlobal(context.Background()), outbox.Message{EventID: "global", Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	s.waitAll(t, []string{"committed", "global"}, 5*time.Second)
	time.Sleep(50 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count["rolled-back"] != 0 || s.count["unbound"] != 0 || s.count["foreign"] != 0 {
		t.Errorf("rows that were never committed were delivered: %v", s.count)
	}
	if s.where["global"] != "global" || s.where["committed"] != tenancytest.TenantA.String() {
		t.Errorf("bindings: %v", s.where)
	}
}
