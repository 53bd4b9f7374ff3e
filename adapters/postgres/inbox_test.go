package postgres_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// msgTiers returns, per tier, the connection option and the relation and
// tenant-awareness of a messaging table named base. The dedicated tier
// gives each tenant its own database (static tables are always named
// schema-qualified, so a search_path cannot separate them).
func msgTiers(t *testing.T, base string) map[string]struct {
	conn  postgres.Option
	aware bool
	table naming.Name
} {
	url := testsvc.PostgresURL(t)
	routed := postgres.Routed(twoDatabases(t), postgres.RoutedConfig{})
	type tier = struct {
		conn  postgres.Option
		aware bool
		table naming.Name
	}
	return map[string]tier{
		"tagged":    {postgres.Connect(url), true, naming.Shared(base)},
		"namespace": {postgres.Connect(url), true, naming.PerTenant("t")},
		"dedicated": {routed, false, naming.Shared(base)},
	}
}

// TestInboxBoundary: at every tier the inbox reaches, tenant B sees and
// changes nothing of tenant A's.
func TestInboxBoundary(t *testing.T) {
	for name, tc := range msgTiers(t, "inbox_"+unique()) {
		t.Run(name, func(t *testing.T) {
			run := unique()
			var in *postgres.Inbox
			c := start(t, postgres.Module("pg", tc.conn, postgres.SchemaPrefix("tw"+run+"_"),
				postgres.InboxRoute("in", postgres.InboxConfig{TenantAware: tc.aware, Table: tc.table})), named("in", &in))
			provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
			ev := "ev-" + run
			tenancytest.Boundary(t, inboxProbe(in, ev))
			// B handling the same event id is B's own first time.
			ran, err := in.Once(tenancy.WithTenant(context.Background(), tenancytest.TenantB), ev,
				func(context.Context, pgx.Tx) error { return nil })
			if err != nil || !ran {
				t.Errorf("B's first handling of %s skipped: %v", ev, err)
			}
		})
	}
}

// inboxProbe marks the event ev handled.
func inboxProbe(in *postgres.Inbox, ev string) tenancytest.Probe {
	return tenancytest.Probe{
		Write:  func(ctx context.Context) error { _, err := in.Mark(ctx, ev); return err },
		Read:   func(ctx context.Context) (bool, error) { return in.Seen(ctx, ev) },
		Count:  func(ctx context.Context) (int, error) { return in.Count(ctx) },
		Delete: func(ctx context.Context) error { return in.Forget(ctx, ev) },
		Intact: func(ctx context.Context) (bool, error) { return in.Seen(ctx, ev) },
	}
}

// TestInboxOnce: a message is handled once, however often and however
// concurrently it arrives; a failing handler marks nothing.
func TestInboxOnce(t *testing.T) {
	url := testsvc.PostgresURL(t)
	var in *postgres.Inbox
	c := start(t, postgres.Module("pg", postgres.Connect(url),
		postgres.InboxRoute("in", postgres.InboxConfig{Table: naming.Shared("once_" + unique())})), named("in", &in))
	provision(t, c, tenancytest.TenantA)
	ctx := tenancy.WithGlobal(context.Background())
	boom := errors.New("handler failed")
	if ran, err := in.Once(ctx, "e1", func(context.Context, pgx.Tx) error { return boom }); ran || !errors.Is(err, boom) {
		t.Fatalf("failing handler: ran=%v err=%v", ran, err)
	}
	var handled atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := in.Once(ctx, "e1", func(ctx context.Context, tx pgx.Tx) error {
				handled.Add(1)
				_, err := tx.Exec(ctx, "SELECT pg_sleep(0.01)")
				return err
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if handled.Load() != 1 {
		t.Fatalf("handled %d times", handled.Load())
	}
	if seen, err := in.Seen(ctx, "e1"); !seen || err != nil {
		t.Fatalf("seen=%v err=%v", seen, err)
	}
}

// TestIdempotencyBoundary: tenant B sees and changes nothing of tenant A's
// in the idempotency store.
func TestIdempotencyBoundary(t *testing.T) {
	for name, tc := range msgTiers(t, "idem_"+unique()) {
		t.Run(name, func(t *testing.T) {
			run := unique()
			var st *postgres.Idempotency
			c := start(t, postgres.Module("pg", tc.conn, postgres.SchemaPrefix("tw"+run+"_"),
				postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{TenantAware: tc.aware, Table: tc.table})), named("idem", &st))
			provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
			key := "k-" + run
			tenancytest.Boundary(t, idempotencyProbe(st, key))
			ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
			ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
			if v, replayed, err := st.Do(ctxB, key, result("b")); err != nil || replayed || string(v) != "b" {
				t.Errorf("B got %q replayed=%v err=%v", v, replayed, err)
			}
			if v, replayed, err := st.Do(ctxA, key, result("x")); err != nil || !replayed || string(v) != "a" {
				t.Errorf("A's replay %q replayed=%v err=%v", v, replayed, err)
			}
		})
	}
}

// TestIdempotencyDeleteReportsDeleted: Delete says whether it removed
// anything: false for a key never stored and for another tenant's key
// (which stays), true once for the caller's own.
func TestIdempotencyDeleteReportsDeleted(t *testing.T) {
	for name, tc := range msgTiers(t, "idemdel_"+unique()) {
		t.Run(name, func(t *testing.T) {
			run := unique()
			var st *postgres.Idempotency
			c := start(t, postgres.Module("pg", tc.conn, postgres.SchemaPrefix("tw"+run+"_"),
				postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{TenantAware: tc.aware, Table: tc.table})), named("idem", &st))
			provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
			ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
			ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
			key := "k-" + run
			if _, _, err := st.Do(ctxA, key, result("a")); err != nil {
				t.Fatal(err)
			}
			for who, del := range map[string]func() (bool, error){
				"missing key":     func() (bool, error) { return st.Delete(ctxA, "missing-"+run) },
				"A's key under B": func() (bool, error) { return st.Delete(ctxB, key) },
			} {
				if deleted, err := del(); err != nil || deleted {
					t.Errorf("%s: deleted=%v err=%v, want false, nil", who, deleted, err)
				}
			}
			if v, ok, err := st.Get(ctxA, key); err != nil || !ok || string(v) != "a" {
				t.Fatalf("A's result after B's delete: %q %v %v", v, ok, err)
			}
			if deleted, err := st.Delete(ctxA, key); err != nil || !deleted {
				t.Fatalf("A deleting its own key: deleted=%v err=%v", deleted, err)
			}
			if deleted, err := st.Delete(ctxA, key); err != nil || deleted {
				t.Errorf("second delete: deleted=%v err=%v, want false", deleted, err)
			}
			if _, ok, err := st.Get(ctxA, key); err != nil || ok {
				t.Errorf("key still stored after delete: %v %v", ok, err)
			}
		})
	}
}

func result(v string) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) { return []byte(v), nil }
}

// idempotencyProbe stores the result "a" under key.
func idempotencyProbe(st *postgres.Idempotency, key string) tenancytest.Probe {
	return tenancytest.Probe{
		Write: func(ctx context.Context) error { _, _, err := st.Do(ctx, key, result("a")); return err },
		Read:  func(ctx context.Context) (bool, error) { _, ok, err := st.Get(ctx, key); return ok, err },
		Count: func(ctx context.Context) (int, error) { return st.Count(ctx) },
		Delete: func(ctx context.Context) error {
			deleted, err := st.Delete(ctx, key)
			if err == nil && !deleted {
				return errors.New("nothing deleted")
			}
			return err
		},
		Intact: func(ctx context.Context) (bool, error) { v, _, err := st.Get(ctx, key); return string(v) == "a", err },
	}
}

// TestSweep: a sharded sweep deletes its tenants' old inbox marks and
// expired idempotency entries, and leaves fresh ones.
func TestSweep(t *testing.T) {
	url := testsvc.PostgresURL(t)
	run := unique()
	var in *postgres.Inbox
	var st *postgres.Idempotency
	assigned := providing(tenancytest.TenantA, tenancytest.TenantB)
	app, c := build(t, postgres.Module("pg", postgres.Connect(url),
		postgres.InboxRoute("in", postgres.InboxConfig{TenantAware: true, Table: naming.Shared("sw_in_" + run)}),
		postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{TenantAware: true, Table: naming.Shared("sw_idem_" + run), TTL: time.Millisecond}),
		postgres.Sweep("in", postgres.SweepConfig{Retain: 50 * time.Millisecond, Every: 20 * time.Millisecond, WorkerConfig: shards.WorkerConfig{Tenants: assigned}}),
		postgres.Sweep("idem", postgres.SweepConfig{Every: 20 * time.Millisecond, WorkerConfig: shards.WorkerConfig{Tenants: assigned}}),
	), named("in", &in), named("idem", &st))
	provision(t, c, tenancytest.TenantA)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxC := tenancy.WithTenant(context.Background(), tenantC) // not assigned
	for _, ctx := range []context.Context{ctxA, ctxC} {
		if _, err := in.Mark(ctx, "old"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Do(ctx, "k", func(context.Context) ([]byte, error) { return []byte("r"), nil }); err != nil {
			t.Fatal(err)
		}
	}
	startApp(t, app)
	conn := superuser(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left, idem int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM sw_in_"+run+" WHERE tenant_id = $1", tenancytest.TenantA.String()).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM sw_idem_"+run+" WHERE tenant_id = $1", tenancytest.TenantA.String()).Scan(&idem); err != nil {
			t.Fatal(err)
		}
		if left == 0 && idem == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sweep left %d inbox and %d idempotency rows of an assigned tenant", left, idem)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if seen, err := in.Seen(ctxC, "old"); err != nil || !seen {
		t.Errorf("an unassigned tenant's mark was swept: seen=%v err=%v", seen, err)
	}
}

// TestSweepRefusals: an unbound sweep over a tenant-scoped route is
// refused; over a tenant-global one it wires.
func TestSweepRefusals(t *testing.T) {
	tagged := postgres.InboxRoute("in", postgres.InboxConfig{TenantAware: true, Table: naming.Shared("i")})
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired,
		postgres.Module("pg", postgres.Connect(nowhere), tagged, postgres.Sweep("in", postgres.SweepConfig{})))
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired,
		postgres.Module("pg", postgres.Routed(resolveNowhere, postgres.RoutedConfig{}),
			postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{Table: naming.Shared("i")}), postgres.Sweep("idem", postgres.SweepConfig{})))
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		postgres.Module("pg", postgres.Connect(nowhere), perTenantDocs(naming.Name{}), postgres.Sweep("orders", postgres.SweepConfig{})))
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid,
		postgres.Module("pg", postgres.Connect(nowhere), tagged, postgres.Sweep("in", postgres.SweepConfig{Retain: -time.Second, WorkerConfig: shards.WorkerConfig{Tenants: providing(tenancytest.TenantA)}})))
	tenancytest.RequireRefused(t, tenancy.CodeWorkerRouteUnknown,
		postgres.Module("pg", postgres.Connect(nowhere), tagged, postgres.Sweep("missing", postgres.SweepConfig{})))
	tenancytest.RequireWires(t, postgres.Module("pg", postgres.Connect(nowhere), tagged,
		postgres.Sweep("in", postgres.SweepConfig{WorkerConfig: shards.WorkerConfig{Tenants: providing(tenancytest.TenantA)}})))
	boom := errors.New("assignment service down")
	app := fx.New(fx.NopLogger, postgres.Module("pg", postgres.Connect(nowhere), tagged,
		postgres.Sweep("in", postgres.SweepConfig{WorkerConfig: shards.WorkerConfig{Tenants: func(context.Context) ([]tenancy.ID, error) { return nil, boom }}})))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("start with a failing tenant provider: %v", err)
	}
	tenancytest.RequireWires(t, postgres.Module("pg", postgres.Connect(nowhere),
		postgres.InboxRoute("in", postgres.InboxConfig{Table: naming.PerTenant("i")}), postgres.Sweep("in", postgres.SweepConfig{})))
}

// TestMessagingTeardown: tearing a tenant down deletes its rows from the
// tagged messaging tables and leaves other tenants' rows.
func TestMessagingTeardown(t *testing.T) {
	run := unique()
	var (
		in  *postgres.Inbox
		st  *postgres.Idempotency
		hub *postgres.Search
	)
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), modules.AllowTeardown(),
		postgres.InboxRoute("in", postgres.InboxConfig{TenantAware: true, Table: naming.Shared("td_in_" + run)}),
		postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{TenantAware: true, Table: naming.Shared("td_idem_" + run)}),
		postgres.HubSearchRoute("hub", postgres.HubSearchConfig{TenantAware: true, Table: naming.Shared("td_hub_" + run)}),
	), named("in", &in), named("idem", &st), named("hub", &hub))
	provision(t, c, tenancytest.TenantA)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	for _, ctx := range []context.Context{ctxA, ctxB} {
		if _, err := in.Mark(ctx, "e"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Do(ctx, "k", func(context.Context) ([]byte, error) { return []byte("r"), nil }); err != nil {
			t.Fatal(err)
		}
		if err := hub.Put(ctx, "d", "walrus"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Teardown(context.Background(), tenancytest.TenantA); err != nil {
		t.Fatal(err)
	}
	for who, ctx := range map[string]context.Context{"A": ctxA, "B": ctxB} {
		want := who == "B"
		seen, err1 := in.Seen(ctx, "e")
		_, stored, err2 := st.Get(ctx, "k")
		n, err3 := hub.Count(ctx, "walrus")
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		if seen != want || stored != want || (n == 1) != want {
			t.Errorf("%s after tearing A down: seen=%v stored=%v hits=%d", who, seen, stored, n)
		}
	}
}
