package postgres_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestTwoRelaysSideBySide: two relays drain one outbox; SKIP LOCKED gives
// every row to exactly one of them in normal operation.
func TestTwoRelaysSideBySide(t *testing.T) {
	url := testsvc.PostgresURL(t)
	run := unique()
	s := newSink()
	first, second := fast(s), fast(s)
	first.Name, second.Name = "relay-1", "relay-2"
	var o *postgres.Outbox
	app, c := build(t, postgres.Module("pg", postgres.Connect(url),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("side_" + run)}),
		postgres.Relay("out", first), postgres.Relay("out", second)), named("out", &o))
	provision(t, c, tenancytest.TenantA)
	rows := fill(t, o, 100, three...)
	startApp(t, app)
	s.waitAll(t, keys(rows), 20*time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	for ev, n := range s.count {
		if n != 1 {
			t.Errorf("%s delivered %d times", ev, n)
		}
	}
}

// TestRelayBackendsTerminated: every backend
// of the module is terminated mid-relay; the relay backs off, recovers on
// its own, and every row is delivered at least once.
func TestRelayBackendsTerminated(t *testing.T) {
	url := testsvc.PostgresURL(t)
	run := unique()
	appName := "tw_relay_fault_" + run
	s := newSink()
	s.slow = 2 * time.Millisecond
	var o *postgres.Outbox
	app, c := build(t, postgres.Module("pg", postgres.Connect(url+"&pool_max_conns=4&application_name="+appName),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("fault_out_" + run)}),
		postgres.Relay("out", fast(s))), named("out", &o))
	provision(t, c, tenancytest.TenantA)
	rows := fill(t, o, 100, three...)
	startApp(t, app)
	for s.delivered() < 30 {
		time.Sleep(5 * time.Millisecond)
	}
	conn := superuser(t)
	var killed int
	if err := conn.QueryRow(context.Background(),
		"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", appName).Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("terminated %d backends: %v", killed, err)
	}
	s.waitAll(t, keys(rows), 20*time.Second)
	dups := 0
	s.mu.Lock()
	for ev, n := range s.count {
		dups += n - 1
		if s.where[ev] != rows[ev].String() {
			t.Errorf("%s delivered under %s", ev, s.where[ev])
		}
	}
	s.mu.Unlock()
	t.Logf("terminated %d backend(s); every row delivered, %d redelivered", killed, dups)
}

// TestRelayRefusals: each relay misconfiguration is refused at fx.New
// with its code; a failing tenant provider fails start.
func TestRelayRefusals(t *testing.T) {
	s := newSink()
	tagged := postgres.OutboxRoute("out", postgres.OutboxConfig{TenantAware: true, Table: naming.Shared("o")})
	global := postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("o")})
	cases := []struct {
		name string
		code tenancy.Code
		opts []postgres.Option
	}{
		{"plain relay over a tenant-aware outbox", tenancy.CodeTenantGlobalRequired,
			[]postgres.Option{postgres.Connect(nowhere), tagged, postgres.Relay("out", fast(s))}},
		{"plain relay over a per-tenant outbox", tenancy.CodeTenantGlobalRequired,
			[]postgres.Option{postgres.Connect(nowhere), postgres.OutboxRoute("out", postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("o")}), postgres.Relay("out", fast(s))}},
		{"plain relay over a routed outbox", tenancy.CodeTenantGlobalRequired,
			[]postgres.Option{postgres.Routed(resolveNowhere, postgres.RoutedConfig{}), global, postgres.Relay("out", fast(s))}},
		{"relay without a destination", tenancy.CodeWiringInvalid,
			[]postgres.Option{postgres.Connect(nowhere), global, postgres.Relay("out", postgres.RelayConfig{})}},
		{"relay over a document route", tenancy.CodeWiringInvalid,
			[]postgres.Option{postgres.Connect(nowhere), perTenantDocs(naming.Name{}), postgres.Relay("orders", fast(s))}},
		{"relay over no route", tenancy.CodeWorkerRouteUnknown,
			[]postgres.Option{postgres.Connect(nowhere), global, postgres.Relay("missing", fast(s))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tenancytest.RequireRefused(t, tc.code, postgres.Module("pg", tc.opts...))
		})
	}
	t.Run("a per-tenant table of a tenant-global outbox is one shared table", func(t *testing.T) {
		tenancytest.RequireWires(t, postgres.Module("pg", postgres.Connect(nowhere),
			postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.PerTenant("o")}), postgres.Relay("out", fast(s))))
	})
	t.Run("sharded relay over a tenant-aware outbox", func(t *testing.T) {
		tenancytest.RequireWires(t, postgres.Module("pg", postgres.Connect(nowhere), tagged, postgres.Relay("out", sharded(fast(s), providing(three...)))))
	})
	t.Run("failing tenant provider fails start", func(t *testing.T) {
		boom := errors.New("assignment service down")
		app := fx.New(fx.NopLogger, postgres.Module("pg", postgres.Connect(nowhere), tagged,
			postgres.Relay("out", sharded(fast(s), func(context.Context) ([]tenancy.ID, error) { return nil, boom }))))
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		if err := app.Start(context.Background()); !errors.Is(err, boom) {
			t.Fatalf("start: %v", err)
		}
	})
}

// TestWorkersStopClean: a relay and a sweep over one outbox deliver, then
// delete the delivered rows; stopping the app leaves no goroutine behind.
func TestWorkersStopClean(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	run := unique()
	s := newSink()
	var o *postgres.Outbox
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("stop_" + run)}),
		postgres.Relay("out", fast(s)),
		postgres.Sweep("out", postgres.SweepConfig{Retain: time.Millisecond, Every: 20 * time.Millisecond}),
	), named("out", &o))
	provision(t, c, tenancytest.TenantA)
	rows := fill(t, o, 10, three...)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.waitAll(t, keys(rows), 10*time.Second)
	conn := superuser(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM stop_"+run).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sweep left %d delivered rows", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRelayRetriesDestinationErrors: a failing destination leaves rows
// pending; the relay backs off and delivers them once it recovers.
func TestRelayRetriesDestinationErrors(t *testing.T) {
	run := unique()
	s := newSink()
	var failures atomic.Int32
	flaky := outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error {
		if failures.Add(1) <= 5 {
			return errors.New("destination unavailable")
		}
		return s.Deliver(ctx, m)
	})
	rc := fast(flaky)
	rc.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	var o *postgres.Outbox
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("flaky_" + run)}),
		postgres.Relay("out", rc)), named("out", &o))
	provision(t, c, tenancytest.TenantA)
	rows := fill(t, o, 5, three...)
	startApp(t, app)
	s.waitAll(t, keys(rows), 10*time.Second)
	s.mu.Lock()
	defer s.mu.Unlock()
	for ev, n := range s.count {
		if n != 1 {
			t.Errorf("%s delivered %d times", ev, n)
		}
	}
}
