package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestDedicatedRenamedDatabaseStaysClaimed (found hole, fixed): tenant A
// claims its database, the operator renames it (ALTER DATABASE ... RENAME
// TO), and tenant B resolves to the new name. The name is no part of the
// database's identity (its oid is): B is refused. When the server's
// identity carried the name, B's spelling met no claim and B read A's
// record.
func TestDedicatedRenamedDatabaseStaysClaimed(t *testing.T) {
	names, dsns := databases(t, 1, "")
	su := superuser(t)
	renamed := names[0] + "_renamed"
	t.Cleanup(func() { exec(t, su, "DROP DATABASE IF EXISTS "+renamed+" WITH (FORCE)") })
	u, _ := url.Parse(dsns[0])
	u.Path = "/" + renamed
	creds := map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: dsns[0]},
		tenancytest.TenantB: {Endpoint: u.String()},
	}
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 1}}),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})), &d)
	provision(t, c, tenancytest.TenantA)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := d.Create(ctxA, "a1", item{Name: "secret"}); err != nil {
		t.Fatal(err)
	}
	exec(t, su, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", names[0])
	exec(t, su, "ALTER DATABASE "+names[0]+" RENAME TO "+renamed)
	ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	r, err := d.Get(ctxB, "a1")
	if tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
		t.Fatalf("tenant B on A's renamed database: got %+v, %v; want dedicated_target_shared", r, err)
	}
	if _, err := d.Create(ctxB, "b1", item{}); tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
		t.Fatalf("tenant B wrote into A's renamed database: %v", err)
	}
}

// TestDedicatedMovedTenantKeepsClaimWhileItsOldPoolServes (found hole,
// fixed): tenant A holds its pool (as a sharded consumer or a long
// transaction does), its credentials move to another database, and its
// next call after the TTL binds the new one. Tenant B then resolves to A's
// old database. A's held pool still reads and writes there, so B is
// refused until that pool has drained and closed (when a move released
// the claim at once, B wrote a row A's held pool read as its own); then
// by the database's record of A as its owner, until it is emptied.
func TestDedicatedMovedTenantKeepsClaimWhileItsOldPoolServes(t *testing.T) {
	_, dsns := databases(t, 2, "")
	var mu sync.Mutex
	creds := map[tenancy.ID]routing.Credentials{tenancytest.TenantA: {Endpoint: dsns[0]}}
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		mu.Lock()
		defer mu.Unlock()
		if c, ok := creds[id]; ok {
			return c, nil
		}
		return routing.Credentials{}, fmt.Errorf("unknown tenant %s", id)
	}
	const ttl = 50 * time.Millisecond
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 1, TTL: ttl}}),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})), &d)
	provision(t, c, tenancytest.TenantA)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	held, release, err := c.Pool(ctxA)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	mu.Lock()
	creds[tenancytest.TenantA] = routing.Credentials{Endpoint: dsns[1]}
	creds[tenancytest.TenantB] = routing.Credentials{Endpoint: dsns[0]}
	mu.Unlock()
	time.Sleep(2 * ttl)
	provision(t, c, tenancytest.TenantA) // A's move: its next call binds the new database
	if _, err := d.Create(ctxB, "b1", item{Name: "b"}); tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
		var n int
		_ = held.QueryRow(context.Background(), "SELECT count(*) FROM docs").Scan(&n)
		t.Fatalf("tenant B on the database A's held pool still serves: %v (A's held pool now sees %d rows)", err, n)
	}
	release()
	released = true
	// Once the pool has closed, the claim is gone, and the server's own
	// record of A as the database's owner refuses B: A's rows are still
	// there.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := d.Create(ctxB, "b1", item{Name: "b"})
		if tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared || time.Now().After(deadline) {
			t.Fatalf("tenant B once A's old pool closed: %v, want the server's record to refuse it", err)
		}
		if strings.Contains(err.Error(), "as its owner") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The operator empties A's old database for B: B is served.
	old, err := pgx.Connect(context.Background(), dsns[0])
	must0(t, err)
	defer old.Close(context.Background())
	exec(t, old, "DROP TABLE public.docs, public.tenantwire_owner_"+tenancytest.TenantA.Hex())
	exec(t, old, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I RESET tenantwire.owner', current_database()); END $$")
	provision(t, c, tenancytest.TenantB)
	if _, err := d.Create(ctxB, "b1", item{Name: "b"}); err != nil {
		t.Fatalf("tenant B on its emptied database: %v", err)
	}
}

// TestDedicatedProbedSpellingsRefused: more spellings of tenant A's
// database, each refused by the server's word: the Unix socket (as role
// root, which peer authentication admits for this process's OS user;
// skipped when it cannot log in), a pg_service.conf entry, options that
// set a search_path, the database named twice (URL path and dbname
// parameter), target_session_attrs, and a host list naming another
// server first that does not answer.
func TestDedicatedProbedSpellingsRefused(t *testing.T) {
	names, dsns := databases(t, 1, "")
	db := names[0]
	su := superuser(t)
	port := su.Config().Port
	svc := filepath.Join(t.TempDir(), "pg_service.conf")
	if err := os.WriteFile(svc, fmt.Appendf(nil, "[probe]\nhost=localhost\nport=%d\ndbname=%s\nuser=postgres\nsslmode=disable\n", port, db), 0o600); err != nil {
		t.Fatal(err)
	}
	spell := map[string]routing.Credentials{
		"service file":         {Endpoint: fmt.Sprintf("service=probe servicefile=%s", svc)},
		"options search_path":  {Endpoint: fmt.Sprintf("postgres://postgres@localhost:%d/%s?sslmode=disable&options=-c%%20search_path%%3Dpg_temp", port, db)},
		"dbname twice":         {Endpoint: fmt.Sprintf("postgres://postgres@localhost:%d/postgres?sslmode=disable&dbname=%s", port, db)},
		"target_session_attrs": {Endpoint: fmt.Sprintf("postgres://postgres@localhost:%d/%s?sslmode=disable&target_session_attrs=read-write", port, db)},
		"dead host first":      {Endpoint: fmt.Sprintf("postgres://postgres@127.0.0.2:1,localhost:%d/%s?sslmode=disable&connect_timeout=2", port, db)},
	}
	if _, err := os.Stat("/var/run/postgresql"); err == nil {
		if _, err := su.Exec(context.Background(), "CREATE ROLE root LOGIN SUPERUSER"); err == nil {
			t.Cleanup(func() { exec(t, su, "DROP ROLE IF EXISTS root") })
		}
		sock := fmt.Sprintf("host=/var/run/postgresql port=%d dbname=%s user=root", port, db)
		if c, err := pgx.Connect(context.Background(), sock); err == nil {
			c.Close(context.Background())
			spell["unix socket"] = routing.Credentials{Endpoint: sock}
		} else {
			t.Logf("no Unix socket spelling: %v", err)
		}
	}
	creds := map[tenancy.ID]routing.Credentials{tenancytest.TenantA: {Endpoint: dsns[0]}}
	tenantOf := map[string]tenancy.ID{}
	i := 0
	for k, c := range spell {
		i++
		id := tenancy.MustParseID(fmt.Sprintf("9e0be000-0000-4000-8000-%012x", i))
		creds[id], tenantOf[k] = c, id
	}
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 8, MaxConnsPerClient: 1}}),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})), &d)
	provision(t, c, tenancytest.TenantA)
	if _, err := d.Create(tenancy.WithTenant(context.Background(), tenancytest.TenantA), "a1", item{Name: "secret"}); err != nil {
		t.Fatal(err)
	}
	for k, id := range tenantOf {
		r, err := d.Get(tenancy.WithTenant(context.Background(), id), "a1")
		if tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
			t.Errorf("spelling %q of A's database: %+v, %v", k, r, err)
		}
	}
}

// TestDedicatedRecreatedDatabase: tenant A's database is dropped and
// created again under its name. It is another database (another oid, no
// data of A's): A's pool, pinned to the old one, is refused its new
// connections, and tenant B spelling the name otherwise is served there,
// never by A's pool.
func TestDedicatedRecreatedDatabase(t *testing.T) {
	names, dsns := databases(t, 1, "")
	su := superuser(t)
	u, _ := url.Parse(dsns[0])
	u.Host = "localhost:" + u.Port()
	creds := map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: dsns[0]},
		tenancytest.TenantB: {Endpoint: u.String()},
	}
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 1}}),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})), &d)
	provision(t, c, tenancytest.TenantA)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := d.Create(ctxA, "a1", item{Name: "secret"}); err != nil {
		t.Fatal(err)
	}
	exec(t, su, "DROP DATABASE "+names[0]+" WITH (FORCE)")
	exec(t, su, "CREATE DATABASE "+names[0])
	// A's first call may meet the connection the drop terminated.
	for try := 0; ; try++ {
		_, err := d.Count(ctxA, document.Query{})
		if tenancy.CodeOf(err) == tenancy.CodeDedicatedTargetShared {
			break
		}
		if err == nil || try == 4 {
			t.Fatalf("A's pool on the recreated database: %v", err)
		}
	}
	provision(t, c, tenancytest.TenantB)
	if n, err := d.Count(tenancy.WithTenant(context.Background(), tenancytest.TenantB), document.Query{}); err != nil || n != 0 {
		t.Fatalf("B on the recreated database: %d, %v", n, err)
	}
}

// TestDedicatedRacingSpellingsOneWinner: a tenant for each spelling of one
// database, all making their first call at once, five rounds: exactly one
// is served, and the database holds only that tenant's record.
func TestDedicatedRacingSpellingsOneWinner(t *testing.T) {
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			names, _ := databases(t, 1, "")
			db := names[0]
			loginNamedAfter(t, superuser(t), db)
			creds := map[tenancy.ID]routing.Credentials{}
			i := 0
			for _, c := range spellings(t, db) {
				i++
				creds[tenancy.MustParseID(fmt.Sprintf("7ace0000-0000-4000-8000-%012x", i))] = c
			}
			var d *postgres.Documents[item]
			c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 16, MaxConnsPerClient: 1}}),
				modules.RequiredIsolation(tenancy.Dedicated),
				postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})), &d)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var won []tenancy.ID
			for id := range creds {
				wg.Go(func() {
					err := c.Provision(context.Background(), id)
					if err == nil {
						_, err = d.Create(tenancy.WithTenant(context.Background(), id), "r", item{Name: id.String()})
					}
					switch {
					case err == nil:
						mu.Lock()
						won = append(won, id)
						mu.Unlock()
					case tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared:
						t.Errorf("tenant %s (%+v): %v", id, creds[id], err)
					}
				})
			}
			wg.Wait()
			if len(won) != 1 {
				t.Fatalf("%d tenants served on one database: %v", len(won), won)
			}
			ctx := tenancy.WithTenant(context.Background(), won[0])
			if n, err := d.Count(ctx, document.Query{}); err != nil || n != 1 {
				t.Fatalf("the winner's database holds %d records, %v", n, err)
			}
		})
	}
}
