package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTenancyMatrix fails, with a diff naming the route, when a change
// alters any route's tier, origin, floor or verdict. It needs no server:
// the dry run opens no connection. After an intended change:
//
//	go test ./examples/service -run TestTenancyMatrix -tenancy.update
func TestTenancyMatrix(t *testing.T) {
	tenancytest.RequireMatrix(t, "testdata/tenancy.golden",
		wiring("postgres://nobody@127.0.0.1:1/none?sslmode=disable", "127.0.0.1:1", "svc", migrate.NewMemoryRegistry()))
}

func TestService(t *testing.T) {
	t.Setenv("TENANTWIRE_PG_URL", testsvc.PostgresURL(t))
	t.Setenv("TENANTWIRE_REDIS_ADDR", testsvc.RedisAddr(t))
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"orders  orders  document  namespace",
		"acme creates order o-1       -> 201",
		"acme reads o-1               -> 200 anvil x3 (view 1)",
		"globex reads o-1             -> 404 not found (view 1)",
		"globex reads o-1             -> 200 rocket x1 (view 2)",
		"acme reads o-1 again         -> 200 anvil x3 (view 2)",
		"GET /readyz -> 200",
		`tenantwire_route_duration_seconds_count{backend="postgres",kind="document",module="orders"`,
		"PUT /orders/{id}     server",
		"postgres orders      client",
		"order created",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestProvisionTearsDown: the teardown provision returns removes the
// schema and the page views of every tenant it provisioned, also when a
// later tenant fails (the zero ID here, which Provision refuses).
func TestProvisionTearsDown(t *testing.T) {
	pgURL, redisAddr := testsvc.PostgresURL(t), testsvc.RedisAddr(t)
	prefix, pool := runPrefix(t, "svcp", pgURL)
	ctx := context.Background()
	schemas := func() (n int) {
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE $1", prefix+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	svc, err := build(wiring(pgURL, redisAddr, prefix, migrate.NewMemoryRegistry()), tracetest.NewSpanRecorder(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.app.Stop(ctx) })
	t.Cleanup(func() { // only a failed teardown leaves anything
		for _, id := range []tenancy.ID{acme, globex} {
			_, _ = pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+postgres.SchemaName(prefix, id)+" CASCADE")
		}
		_, _ = svc.views.Delete(tenancy.WithTenant(ctx, acme), "orders/o-1")
	})

	for _, ids := range [][]tenancy.ID{{acme, globex}, {acme, {}}} {
		teardown, err := svc.provision(ctx, ids...)
		if wantErr := ids[1].IsZero(); (err != nil) != wantErr {
			teardown()
			t.Fatalf("provision %v: %v", ids, err)
		}
		if _, err := svc.views.Add(tenancy.WithTenant(ctx, acme), "orders/o-1", 1); err != nil {
			teardown()
			t.Fatal(err)
		}
		if n := schemas(); n == 0 {
			t.Errorf("provision %v: no schema under %s", ids, prefix)
		}
		teardown()
		if n := schemas(); n != 0 {
			t.Errorf("provision %v: %d schemas under %s left after teardown", ids, n, prefix)
		}
		if v, err := svc.views.Get(tenancy.WithTenant(ctx, acme), "orders/o-1"); err != nil || v != 0 {
			t.Errorf("provision %v: acme's views after teardown = %d, %v; want 0", ids, v, err)
		}
	}
}

// runPrefix is a schema prefix of the test's own, so runs never see each
// other's schemas, and a pool on pgURL to clean them up with. The pool
// closes after every cleanup registered later: cleanups run
// last-registered first.
func runPrefix(t *testing.T, tag, pgURL string) (string, *pgxpool.Pool) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return fmt.Sprintf("%s%d", tag, time.Now().UnixNano()%1_000_000_000), pool
}
