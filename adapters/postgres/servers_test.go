package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	osexec "os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
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
		dsns[id] = createDatabase(t, base, "tw_srv_"+run+"_"+id.Hex()[:4])
	}
	return dsns
}

// createDatabase creates db on the server of base, drops it when the test
// ends, and returns its DSN.
func createDatabase(t *testing.T, base, db string) string {
	t.Helper()
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
	return u.String()
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
	opts := []postgres.Option{postgres.Routed(credsOf(dsns), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 2}}),
		modules.RequiredIsolation(tenancy.Dedicated)}
	var targets []any
	for i, p := range pairs {
		opts = append(opts, postgres.Document[item](p.table, postgres.DocumentConfig{Read: naming.Shared(p.table), Write: naming.Shared(p.table)}))
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
	var o *postgres.Outbox
	app, c := build(t, postgres.Module("pg", postgres.Routed(credsOf(dsns), postgres.RoutedConfig{}),
		postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared("out")}),
		postgres.Relay("out", sharded(fast(s), providing(three...)))), named("out", &o))
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

// TestMoveTenantBetweenServers follows docs/postgres.md's move of a tenant
// from one server to another: the resolver refuses the tenant while it
// moves and Evict drops its pool, so no call reaches either database (no
// fallback); pg_dump copies its database; the resolver then names the new
// one, and the tenant's next call runs there with all its records, its
// claim moved along.
func TestMoveTenantBetweenServers(t *testing.T) {
	first, second := testsvc.PostgresURL(t), testsvc.PostgresSecondURL(t)
	run := unique()
	from := createDatabase(t, first, "tw_move_"+run+"_from")
	to := createDatabase(t, second, "tw_move_"+run+"_to")
	errMoving := errors.New("tenant is moving")
	var mu sync.Mutex
	creds := map[tenancy.ID]routing.Credentials{tenancytest.TenantA: {Endpoint: from}}
	moving := false
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		mu.Lock()
		defer mu.Unlock()
		if id == tenancytest.TenantA && moving {
			return routing.Credentials{}, errMoving
		}
		if c, ok := creds[id]; ok {
			return c, nil
		}
		return routing.Credentials{}, fmt.Errorf("unknown tenant %s", id)
	}
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 2}}),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.Shared("docs"), Write: naming.Shared("docs")})), &d)
	provision(t, c, tenancytest.TenantA)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	for i := range 3 {
		if _, err := d.Create(ctxA, fmt.Sprint("r", i), item{Name: "a", N: i}); err != nil {
			t.Fatal(err)
		}
	}
	if p := serverPort(t, c, tenancytest.TenantA); p == 5433 {
		t.Fatalf("A starts on port %d, the second server", p)
	}

	// 1. Stop the tenant's traffic: the resolver refuses it, Evict drops
	// its pool (every replica does the same, or waits for TTL).
	mu.Lock()
	moving = true
	mu.Unlock()
	c.Evict(tenancytest.TenantA)
	if _, err := d.Get(ctxA, "r0"); !errors.Is(err, errMoving) {
		t.Fatalf("a call during the move: %v, want the resolver's error", err)
	}
	// 2. Copy the database.
	dump := osexec.Command("pg_dump", "--no-owner", "--dbname="+from)
	restore := osexec.Command("psql", "-q", "-v", "ON_ERROR_STOP=1", "--dbname="+to)
	pipe, err := dump.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	restore.Stdin = pipe
	if err := dump.Start(); err != nil {
		msg := fmt.Sprintf("pg_dump cannot run (%v); the move needs the PostgreSQL client tools", err)
		if testsvc.Required() {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED: " + msg)
	}
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	if err := dump.Wait(); err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	// 3. Point the resolver at the new database and let the tenant back.
	mu.Lock()
	creds[tenancytest.TenantA] = routing.Credentials{Endpoint: to}
	moving = false
	mu.Unlock()
	if p := serverPort(t, c, tenancytest.TenantA); p != 5433 {
		t.Fatalf("A moved to port %d, want the second server's 5433", p)
	}
	if n, err := d.Count(ctxA, document.Query{}); err != nil || n != 3 {
		t.Fatalf("A's records after the move: %d, %v", n, err)
	}
	if v, err := d.Update(ctxA, "r1", item{Name: "moved", N: 1}, 1); err != nil || v != 2 {
		t.Fatalf("update after the move: version %d, %v", v, err)
	}
	// The claim moved with A: another tenant resolving to A's new database
	// is refused. The old one is A's no longer in this process, but it
	// still holds A's copy, and with it the record of A as its owner: a
	// tenant handed that database is refused by the server's record, not
	// served A's rows (the move ends by dropping the old copy).
	mu.Lock()
	creds[tenancytest.TenantB] = routing.Credentials{Endpoint: to}
	mu.Unlock()
	ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	_, err = d.Get(ctxB, "r1")
	requireSharedTarget(t, "B on A's new database", err)
	mu.Lock()
	creds[tenancytest.TenantB] = routing.Credentials{Endpoint: from}
	mu.Unlock()
	c.Evict(tenancytest.TenantB)
	r, err := d.Get(ctxB, "r1")
	requireSharedTarget(t, "B on A's old database, whose claim A released", err)
	if r.Value.Name != "" {
		t.Fatalf("B read A's record on A's old database: %+v", r)
	}
}
