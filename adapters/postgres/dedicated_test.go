package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/connprobe"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// databases creates n fresh databases on the test server and returns
// their names and DSNs (with extra query parameters appended).
func databases(t *testing.T, n int, query string) ([]string, []string) {
	t.Helper()
	base := testsvc.PostgresURL(t)
	conn := superuser(t)
	run := unique()
	var names, dsns []string
	for i := range n {
		db := fmt.Sprintf("tw_ded_%s_%d", run, i)
		exec(t, conn, "CREATE DATABASE "+db)
		t.Cleanup(func() { exec(t, conn, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
		u, _ := url.Parse(base)
		u.Path = "/" + db
		if query != "" {
			u.RawQuery += "&" + query
		}
		names, dsns = append(names, db), append(dsns, u.String())
	}
	return names, dsns
}

func resolverOf(m map[tenancy.ID]routing.Credentials) routing.Resolver {
	return func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
		if c, ok := m[tn]; ok {
			return c, nil
		}
		return routing.Credentials{}, fmt.Errorf("unknown tenant %s", tn)
	}
}

func requireSharedTarget(t *testing.T, what string, err error) {
	t.Helper()
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared || te.Module != "pg" || te.Backend != "postgres" || te.Fix == "" {
		t.Fatalf("%s on tenant A's database: %v", what, err)
	}
}

// TestDedicatedSharedDatabaseRefused: tenant B resolving to tenant A's
// database (other connection parameters, or the database named through
// Params) is refused on every call before anything runs: it neither reads,
// counts, deletes nor writes A's records, and gets no pool.
func TestDedicatedSharedDatabaseRefused(t *testing.T) {
	names, dsns := databases(t, 1, "")
	base := testsvc.PostgresURL(t)
	tC := tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c")
	resolve := resolverOf(map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: dsns[0]},
		tenancytest.TenantB: {Endpoint: dsns[0] + "&application_name=other", User: "postgres", Secret: "x"},
		tC:                  {Endpoint: base, Params: map[string]string{"database": names[0]}},
	})
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 1}}),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs"), Write: naming.Shared("docs")})), &d)
	provision(t, c, tenancytest.TenantA)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := d.Create(ctxA, "a1", item{Name: "secret"}); err != nil {
		t.Fatal(err)
	}
	for _, tn := range []tenancy.ID{tenancytest.TenantB, tC} {
		ctx := tenancy.WithTenant(context.Background(), tn)
		_, err := d.Get(ctx, "a1")
		requireSharedTarget(t, "get", err)
		var te *tenancy.Error
		if errors.As(err, &te); te.Route != "docs" {
			t.Errorf("refusal names route %q", te.Route)
		}
		_, err = d.Count(ctx, document.Query{})
		requireSharedTarget(t, "count", err)
		_, err = d.List(ctx, document.Query{})
		requireSharedTarget(t, "list", err)
		requireSharedTarget(t, "delete", d.Delete(ctx, "a1"))
		_, err = d.Create(ctx, "b1", item{})
		requireSharedTarget(t, "create", err)
		_, _, err = c.Pool(ctx)
		requireSharedTarget(t, "pool", err)
		requireSharedTarget(t, "provision", c.Provision(context.Background(), tn))
	}
	if n, err := d.Count(ctxA, document.Query{}); err != nil || n != 1 {
		t.Fatalf("A's records after B's attempts: %d, %v", n, err)
	}
	if r, err := d.Get(ctxA, "a1"); err != nil || r.Value.Name != "secret" {
		t.Fatalf("A's record: %+v, %v", r, err)
	}
}

// TestDedicatedDatabasesOnOneServer: tenants on one server and user that
// differ only in the database name are separate targets: what A writes, B
// does not find, whether the database is named in the DSN or in Params.
func TestDedicatedDatabasesOnOneServer(t *testing.T) {
	names, dsns := databases(t, 2, "")
	base := testsvc.PostgresURL(t)
	for name, creds := range map[string]map[tenancy.ID]routing.Credentials{
		"dsn": {tenancytest.TenantA: {Endpoint: dsns[0]}, tenancytest.TenantB: {Endpoint: dsns[1]}},
		"params": {
			tenancytest.TenantA: {Endpoint: base, Params: map[string]string{"database": names[0]}},
			tenancytest.TenantB: {Endpoint: base, Params: map[string]string{"database": names[1]}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			table := "docs_" + unique()
			var d *postgres.Documents[item]
			c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 1}}),
				postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared(table), Write: naming.Shared(table)})), &d)
			provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
			ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
			ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
			if _, err := d.Create(ctxA, "a1", item{Name: "a"}); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Get(ctxB, "a1"); !errors.Is(err, document.ErrNotFound) {
				t.Fatalf("B reading A's record: %v", err)
			}
			if n, err := d.Count(ctxB, document.Query{}); err != nil || n != 0 {
				t.Fatalf("B counts %d, %v", n, err)
			}
			if err := d.Delete(ctxB, "a1"); !errors.Is(err, document.ErrNotFound) {
				t.Fatalf("B deleting A's record: %v", err)
			}
			if _, err := d.Get(ctxA, "a1"); err != nil {
				t.Fatalf("A lost its record: %v", err)
			}
		})
	}
}

// TestRoutedBudgetIsAHardLimit: with MaxClients 2 and one connection per
// pool, twelve tenants calling at once never hold more than two
// connections: a retired pool keeps its slot until it has closed its
// connections. Counted exactly by a dialer wrapper on the client side, and
// on the server as the backends of this test's application_name busy with
// a client's statement or transaction: a backend whose client closed lingers
// idle a moment while it exits (longer on a loaded machine, when a count
// of every backend went past any allowance), but it runs no statement, so
// a busy backend is a connection in use and the bound there is exact too.
func TestRoutedBudgetIsAHardLimit(t *testing.T) {
	const tenants = 12
	app := "tw_budget_" + unique()
	_, dsns := databases(t, tenants, "application_name="+app)
	var dialed connprobe.Counter
	configure := func(pc *pgxpool.Config) { pc.ConnConfig.DialFunc = dialed.DialContext }
	ids := make([]tenancy.ID, tenants)
	creds := map[tenancy.ID]routing.Credentials{}
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+100))
		creds[ids[i]] = routing.Credentials{Endpoint: dsns[i]}
	}
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 2, MaxConnsPerClient: 1, MaxWait: time.Minute}, Configure: configure}),
		modules.ConnBudget(2),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs"), Write: naming.Shared("docs")})), &d)
	provision(t, c, ids...)

	conn := superuser(t)
	stop := make(chan struct{})
	type sampled struct{ top, samples int }
	peak := make(chan sampled)
	go func() {
		var s sampled
		for {
			select {
			case <-stop:
				peak <- s
				return
			default:
			}
			var n int
			if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
				WHERE application_name = $1 AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')`, app).Scan(&n); err == nil {
				s.top, s.samples = max(s.top, n), s.samples+1
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			ctx := tenancy.WithTenant(context.Background(), id)
			for i := range 3 {
				key := fmt.Sprint("k", i)
				if _, err := d.Create(ctx, key, item{N: i}); err != nil {
					t.Error(err)
					return
				}
				if r, err := d.Get(ctx, key); err != nil || r.Value.N != i {
					t.Errorf("get %s: %+v, %v", key, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	server := <-peak
	t.Logf("peak connections: %d dialed and open, %d busy in pg_stat_activity (%d samples)", dialed.Peak(), server.top, server.samples)
	if p := dialed.Peak(); p > 2 || p == 0 {
		t.Errorf("peak %d connections for a budget of 2", p)
	}
	if server.top > 2 || server.samples == 0 {
		t.Errorf("peak %d busy server backends for a budget of 2 (%d samples)", server.top, server.samples)
	}
}
