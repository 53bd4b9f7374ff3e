package modules_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

type order struct{ Item string }

// badOptions: a PostgreSQL module with two option errors (no connection
// source, a route with no relations) next to a memory module whose route
// misses its floor, and a worker over a route no module declares.
func badOptions() fx.Option {
	return fx.Options(
		postgres.Module("pg",
			postgres.Document[order]("orders", postgres.DocumentConfig{}),
		),
		memory.Module("shop",
			modules.RequiredIsolation(tenancy.Namespace),
			memory.Document[order]("carts", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("carts")}),
		),
		// A container name with a dot: the route's own option error; the
		// module's unbound consumer over a tenant-aware stream is still
		// checked.
		memory.Module("misc",
			memory.CacheRoute("bad", memory.CacheConfig{Keys: naming.Shared("a.b")}),
			memory.StreamRoute("events", memory.StreamConfig{TenantAware: true, Stream: naming.Shared("events")}),
			memory.Consume(memory.ConsumerConfig{Name: "drain", Stream: "events", Handle: func(context.Context, memory.Message) error { return nil }}),
		),
		modules.Worker(floors.Worker{Name: "sweep", Module: "shop", Route: "nowhere"}),
	)
}

var wantBadCodes = []tenancy.Code{
	"memory_tenancy_validation_failed",
	// the PostgreSQL module's options: no connection source, no relations
	tenancy.CodeWiringInvalid, tenancy.CodeWiringInvalid,
	// the misc module's bad container name, and its unbound consumer
	tenancy.CodeWiringInvalid, tenancy.CodeTenantGlobalRequired,
	tenancy.CodeWorkerRouteUnknown,
}

func sortedCodes(err error) []tenancy.Code {
	c := tenancy.Codes(err)
	slices.Sort(c)
	return c
}

// An adapter's option error used to be an fx.Error, which stops fx.New
// before any invoke and so hid every other module's floor errors.
func TestOptionErrorsJoinedWithFloorErrorsInFxNew(t *testing.T) {
	err := fx.New(fx.NopLogger, badOptions()).Err()
	got, want := sortedCodes(err), slices.Sorted(slices.Values(wantBadCodes))
	if !slices.Equal(got, want) {
		t.Fatalf("codes %v, want %v (err: %v)", got, want, err)
	}
}

func TestDryRunReportsEveryViolationAndEveryRow(t *testing.T) {
	rep, err := modules.DryRun(badOptions())
	got, want := sortedCodes(err), slices.Sorted(slices.Values(wantBadCodes))
	if !slices.Equal(got, want) {
		t.Fatalf("codes %v, want %v (err: %v)", got, want, err)
	}
	if len(rep.Errors) != len(wantBadCodes) {
		t.Fatalf("report holds %d errors, want %d", len(rep.Errors), len(wantBadCodes))
	}
	// The refused routes have rows: the floor miss and the option error.
	verdicts := map[string]string{}
	for _, r := range rep.Matrix.Rows {
		verdicts[r.Module+"/"+r.Route] = r.Verdict
	}
	wantRows := map[string]string{
		"pg/orders":   string(tenancy.CodeWiringInvalid),
		"shop/carts":  "memory_tenancy_validation_failed",
		"misc/bad":    string(tenancy.CodeWiringInvalid),
		"misc/events": floors.VerdictOK,
	}
	if !maps(verdicts, wantRows) {
		t.Fatalf("verdicts %v, want %v", verdicts, wantRows)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A module pointed at an address nothing answers on dry-runs at once, and
// neither the adapters' constructors nor the app's own run: an invoke that
// would query the route and a constructor of the app's are never called.
func TestDryRunOpensNoConnection(t *testing.T) {
	called := map[string]bool{}
	opts := fx.Options(
		fx.WithLogger(func() fxevent.Logger { called["logger"] = true; return fxevent.NopLogger }),
		fx.Provide(func() string { called["provide"] = true; return "x" }),
		postgres.Module("pg",
			// 10.255.255.1 is unroutable: a connection attempt would hang
			// until connect_timeout.
			postgres.Connect("postgres://tw@10.255.255.1:5432/tw?connect_timeout=30"),
			modules.RequiredIsolation(tenancy.Namespace),
			postgres.Document[order]("orders", postgres.DocumentConfig{
				Read: naming.PerTenant("orders"), Write: naming.PerTenant("orders"),
			}),
		),
		fx.Invoke(func(d *postgres.Documents[order]) error {
			called["invoke"] = true
			ctx := tenancy.WithTenant(context.Background(), tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7"))
			_, err := d.Get(ctx, "o-1")
			return err
		}),
	)
	start := time.Now()
	rep, err := modules.DryRun(opts)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("dry run took %s: something waited on the network", took)
	}
	if len(called) > 0 {
		t.Fatalf("dry run ran the app's own functions: %v", called)
	}
	if len(rep.Matrix.Rows) != 1 || rep.Matrix.Rows[0].Reached != tenancy.Namespace || rep.Matrix.Rows[0].Verdict != floors.VerdictOK {
		t.Fatalf("matrix %+v", rep.Matrix.Rows)
	}
}

func TestDryRunWarningsAreValues(t *testing.T) {
	rep, err := modules.DryRun(memory.Module("shop",
		memory.Document[order]("orders", memory.DocumentConfig{TenantAware: true, Read: naming.PerTenant("orders")}),
	))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0].Module != "shop" || rep.Warnings[0].Route != "orders" {
		t.Fatalf("warnings %+v, want the redundant marker on shop/orders", rep.Warnings)
	}
}

func TestDryRunReturnsWhatStopsFxFirst(t *testing.T) {
	boom := errors.New("boom")
	rep, err := modules.DryRun(fx.Error(boom), memory.Module("shop"))
	if !errors.Is(err, boom) || len(rep.Matrix.Rows) != 0 {
		t.Fatalf("err %v, rows %d", err, len(rep.Matrix.Rows))
	}
}

// A module-level option error (no connection source) refuses every route
// of the module, and the matrix says so.
func TestDryRunModuleOptionErrorMarksEveryRoute(t *testing.T) {
	rep, err := modules.DryRun(postgres.Module("pg",
		postgres.Document[order]("orders", postgres.DocumentConfig{Read: naming.Shared("orders"), Write: naming.Shared("orders")}),
	))
	if !errors.Is(err, tenancy.CodeWiringInvalid) {
		t.Fatalf("err %v", err)
	}
	if len(rep.Matrix.Rows) != 1 || rep.Matrix.Rows[0].Verdict != string(tenancy.CodeWiringInvalid) {
		t.Fatalf("matrix %+v", rep.Matrix.Rows)
	}
}

// Every backend reports its option errors through the app's check, so
// another module's floor miss is reported with them.
func TestEveryBackendJoinsItsOptionErrors(t *testing.T) {
	floorMiss := memory.Module("shop",
		modules.RequiredIsolation(tenancy.Namespace),
		memory.Document[order]("carts", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("carts")}),
	)
	for name, bad := range map[string]fx.Option{
		"postgres": postgres.Module("x"), // no DSN, Pool or Routed
		"redis":    redis.Module("x", redis.CacheRoute("c", redis.RouteConfig{}), redis.CacheRoute("c", redis.RouteConfig{})),
		"mongo":    mongo.Module("x"), // no database
		"kafka":    kafka.Module("x"), // no brokers
		"neo4j":    neo4j.Module("x", neo4j.GraphRoute("g", neo4j.RouteConfig{}), neo4j.GraphRoute("g", neo4j.RouteConfig{})),
		"memory":   memory.Module("x", memory.CacheRoute("c", memory.CacheConfig{Keys: naming.Shared("a.b")})),
	} {
		t.Run(name, func(t *testing.T) {
			codes := tenancy.Codes(fx.New(fx.NopLogger, bad, floorMiss).Err())
			if !slices.Contains(codes, tenancy.CodeWiringInvalid) || !slices.Contains(codes, "memory_tenancy_validation_failed") {
				t.Fatalf("codes %v, want the option error and the other module's floor miss", codes)
			}
		})
	}
}
