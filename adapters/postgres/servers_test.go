package postgres_test

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// twoServers places tenant A on the first test server and tenants B and C
// on the second (scripts/services.sh starts it on port 5433), each in a
// fresh database of its own, and returns each tenant's DSN.
func twoServers(t *testing.T) map[tenancy.ID]string {
	t.Helper()
	first, second := testsvc.PostgresURL(t), testsvc.PostgresSecondURL(t)
	run := unique()
	dsns := map[tenancy.ID]string{}
	for id, base := range map[tenancy.ID]string{tenancytest.TenantA: first, tenancytest.TenantB: second, tenantC: second} {
		db := "tw_srv_" + run + "_" + id.Hex()[:4]
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Fatal(err)
		}
		exec(t, conn, "CREATE DATABASE "+db)
		t.Cleanup(func() {
			exec(t, conn, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			conn.Close(context.Background())
		})
		u, _ := url.Parse(base)
		u.Path = "/" + db
		dsns[id] = u.String()
	}
	return dsns
}

func credsOf(dsns map[tenancy.ID]string) routing.Resolver {
	creds := map[tenancy.ID]routing.Credentials{}
	for id, dsn := range dsns {
		creds[id] = routing.Credentials{Endpoint: dsn}
	}
	return resolverOf(creds)
}

// serverPort is the port of the server the tenant's calls reach.
func serverPort(t *testing.T, c *postgres.Client, id tenancy.ID) int {
	t.Helper()
	ctx := tenancy.WithTenant(context.Background(), id)
	pool, done, err := c.Pool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	var port int
	if err := pool.QueryRow(ctx, "SELECT inet_server_port()").Scan(&port); err != nil {
		t.Fatal(err)
	}
	return port
}

// TestDedicatedOnTwoServers: the routed resolver spreads tenants over two
// PostgreSQL servers (one set of databases for both subtests: creating and
// dropping databases is the slow part).
func TestDedicatedOnTwoServers(t *testing.T) {
	dsns := twoServers(t)
	t.Run("boundary", func(t *testing.T) { boundaryOnTwoServers(t, dsns) })
	t.Run("sharded relay", func(t *testing.T) { relayOnTwoServers(t, dsns) })
}

// boundaryOnTwoServers: each tenant's calls reach its own server, and the
// boundary probe holds between tenants on different servers and between
// two tenants sharing the second one.
func boundaryOnTwoServers(t *testing.T, dsns map[tenancy.ID]string) {
	// One route per probe: a probe writes one fixed record under its A.
	pairs := []struct {
		a, b  tenancy.ID
		table string
	}{
		{tenancytest.TenantA, tenancytest.TenantB, "docs1"}, // first server, then second
		{tenancytest.TenantB, tenancytest.TenantA, "docs2"}, // the other way
		{tenancytest.TenantB, tenantC, "docs3"},             // both on the second
	}
	docs := make([]*postgres.Documents[item], len(pairs))
	opts := []postgres.Option{postgres.Routed(credsOf(dsns), postgres.RoutedConfig{MaxPools: 4, MaxConnsPerPool: 2}),
		postgres.RequiredIsolation(tenancy.Dedicated)}
	var targets []any
	for i, p := range pairs {
		opts = append(opts, postgres.Document[item](p.table, postgres.DocumentConfig{Read: postgres.Table(p.table), Write: postgres.Table(p.table)}))
		targets = append(targets, named(p.table, &docs[i]))
	}
	c := start(t, postgres.Module("pg", opts...), targets...)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB, tenantC)
	ports := map[tenancy.ID]int{}
	for id, dsn := range dsns {
		u, _ := url.Parse(dsn)
		want := 5432
		if p := u.Port(); p != "" {
			want, _ = strconv.Atoi(p)
		}
		if ports[id] = serverPort(t, c, id); ports[id] != want {
			t.Fatalf("tenant %s reaches the server on port %d, want %d", id, ports[id], want)
		}
	}
	if ports[tenancytest.TenantA] == ports[tenancytest.TenantB] {
		t.Fatalf("A and B on one server (port %d): the second server is the first one", ports[tenancytest.TenantA])
	}
	for i, pair := range pairs {
		p := docProbe(t, docs[i])
		p.A, p.B = pair.a, pair.b
		tenancytest.Boundary(t, p)
	}
	// The rows are where the resolver put them: in the writer's own
	// database, read directly on its server, and nowhere else.
	for _, pair := range pairs {
		for id, dsn := range dsns {
			conn, err := pgx.Connect(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			err = conn.QueryRow(context.Background(), "SELECT count(*) FROM "+pair.table).Scan(&n)
			conn.Close(context.Background())
			if want := map[bool]int{true: 1}[id == pair.a]; err != nil || n != want {
				t.Errorf("%s in tenant %s's database: %d rows (%v), want %d", pair.table, id, n, err, want)
			}
		}
	}
}

// relayOnTwoServers: one sharded relay drains the outboxes of tenants on
// two servers, each row forwarded once, bound to its own tenant.
func relayOnTwoServers(t *testing.T, dsns map[tenancy.ID]string) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // after the app's stop, registered later
	s := newSink()
	var o *postgres.OutboxRoute
	app, c := build(t, postgres.Module("pg", postgres.Routed(credsOf(dsns), postgres.RoutedConfig{}),
		postgres.Outbox("out", postgres.OutboxConfig{Table: postgres.Table("out")}),
		postgres.ShardedRelay("out", providing(three...), fast(s))), named("out", &o))
	provision(t, c, three...)
	rows := fill(t, o, 20, three...)
	startApp(t, app)
	s.waitAll(t, keys(rows), 10*time.Second)
	time.Sleep(100 * time.Millisecond) // room for a duplicate to show up
	s.mu.Lock()
	defer s.mu.Unlock()
	for ev, id := range rows {
		if s.where[ev] != id.String() {
			t.Errorf("%s of %s delivered under %s", ev, id, s.where[ev])
		}
		if s.count[ev] != 1 {
			t.Errorf("%s delivered %d times", ev, s.count[ev])
		}
	}
	if len(s.count) != len(rows) {
		t.Errorf("%d deliveries for %d rows", len(s.count), len(rows))
	}
}
