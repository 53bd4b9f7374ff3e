package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// spellings are credentials that all reach database db on the test server
// (as the superuser or as role db, whose default database is db), each
// named by the shape it takes.
func spellings(t *testing.T, db string) map[string]routing.Credentials {
	t.Helper()
	u, err := url.Parse(testsvcURL(t))
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	at := func(host string) string {
		return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", host, db)
	}
	s := map[string]routing.Credentials{
		"url":                {Endpoint: at("127.0.0.1:" + port)},
		"localhost":          {Endpoint: at("localhost:" + port)},
		"upper-case host":    {Endpoint: at("LOCALHOST:" + port)},
		"ipv4-mapped":        {Endpoint: at("[::ffff:127.0.0.1]:" + port)},
		"percent-encoded":    {Endpoint: at("%31%32%37.0.0.1:" + port)},
		"host list":          {Endpoint: fmt.Sprintf("postgres://postgres@127.0.0.1:%s,127.0.0.1:1/%s?sslmode=disable", port, db)},
		"keyword/value":      {Endpoint: fmt.Sprintf("host=127.0.0.1 port=%s dbname=%s user=postgres sslmode=disable application_name=x", port, db)},
		"params database":    {Endpoint: fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", port), Params: map[string]string{"database": db}},
		"default database":   {Endpoint: fmt.Sprintf("postgres://%s@127.0.0.1:%s/?sslmode=disable", db, port)},
		"user as credential": {Endpoint: fmt.Sprintf("postgres://127.0.0.1:%s?sslmode=disable", port), User: db},
		"other options":      {Endpoint: at("127.0.0.1:"+port) + "&connect_timeout=7&application_name=b", User: "postgres", Secret: "ignored"},
	}
	return s
}

func testsvcURL(t *testing.T) string {
	t.Helper()
	c := superuser(t)
	return fmt.Sprintf("postgres://postgres@%s:%d/", c.Config().Host, c.Config().Port)
}

// TestDedicatedOneTargetManySpellings: tenant A on a database, and a
// tenant for each other spelling of that database (host names and case,
// IPv4-mapped and percent-encoded addresses, a host list, keyword/value
// DSNs, the database given by Params or left to the user's default): every one of them is refused before it reads or writes, and
// the spellings no string rule can see are refused by the server's word.
// Rounds shuffle which spelling comes first.
func TestDedicatedOneTargetManySpellings(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			names, _ := databases(t, 1, "")
			db := names[0]
			su := superuser(t)
			loginNamedAfter(t, su, db) // reaches db as its default database
			all := spellings(t, db)
			keys := make([]string, 0, len(all))
			for k := range all {
				keys = append(keys, k)
			}
			rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			// The first tenant takes a spelling that connects on any
			// machine; every other spelling goes to a tenant of its own.
			first := []string{"url", "keyword/value", "params database", "default database"}[round%4]
			creds := map[tenancy.ID]routing.Credentials{tenancytest.TenantA: all[first]}
			tenantOf := map[string]tenancy.ID{}
			for i, k := range keys {
				if k == first {
					continue
				}
				id := tenancy.MustParseID(fmt.Sprintf("5e11e000-0000-4000-8000-%012x", i+1))
				creds[id], tenantOf[k] = all[k], id
			}
			var d *postgres.Documents[item]
			c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 1}}),
				modules.RequiredIsolation(tenancy.Dedicated),
				postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})), &d)
			provision(t, c, tenancytest.TenantA)
			ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
			if _, err := d.Create(ctxA, "a1", item{Name: "secret"}); err != nil {
				t.Fatalf("tenant A (%s): %v", first, err)
			}
			byServer := 0
			for _, k := range keys {
				id, ok := tenantOf[k]
				if !ok {
					continue
				}
				ctx := tenancy.WithTenant(context.Background(), id)
				_, err := d.Get(ctx, "a1")
				var te *tenancy.Error
				if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared {
					t.Errorf("spelling %q (%+v) of A's database: %v", k, creds[id], err)
					continue
				}
				// The server's word: the identity it reports, or the
				// database's owner setting, read with it on connect.
				if strings.Contains(te.Detail, "its server reports") || strings.Contains(te.Detail, "as its owner") {
					byServer++
				}
				if _, err := d.Create(ctx, "b-"+k, item{}); tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
					t.Errorf("spelling %q wrote: %v", k, err)
				}
			}
			if byServer == 0 {
				t.Error("no spelling needed the server's word: the test no longer shows that the server decides")
			}
			if n, err := d.Count(ctxA, document.Query{}); err != nil || n != 1 {
				t.Fatalf("A's records: %d, %v", n, err)
			}
		})
	}
}

// TestDedicatedDefaultDatabasesAreDistinct: two roles that each rely on
// their own default database (the one named after the role) are two
// targets, not one "host:port/": both work and neither sees the other.
func TestDedicatedDefaultDatabasesAreDistinct(t *testing.T) {
	names, _ := databases(t, 2, "")
	su := superuser(t)
	for _, n := range names {
		loginNamedAfter(t, su, n)
	}
	u, _ := url.Parse(testsvcURL(t))
	creds := map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: fmt.Sprintf("postgres://%s?sslmode=disable", u.Host), User: names[0]},
		tenancytest.TenantB: {Endpoint: fmt.Sprintf("postgres://%s?sslmode=disable", u.Host), User: names[1]},
	}
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 1}}),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})), &d)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	ctxA, ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantA), tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	if _, err := d.Create(ctxA, "a1", item{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctxB, "a1"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("B reading A's record: %v", err)
	}
}

// loginNamedAfter creates a login role named db, whose default database is
// db; the database goes first at cleanup, since the role owns its tables.
func loginNamedAfter(t *testing.T, su *pgx.Conn, db string) {
	t.Helper()
	exec(t, su, "CREATE ROLE "+db+" LOGIN SUPERUSER")
	t.Cleanup(func() {
		exec(t, su, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		exec(t, su, "DROP ROLE IF EXISTS "+db)
	})
}

// TestDedicatedPoolStaysOnItsServer: a tenant's pool whose host list leads
// to another tenant's database once its own server turns it away (here:
// the connection limit of its database on the second server drops to 0)
// is refused that connection: a pool is pinned to the server database
// its first connection reported, so it never reads the other tenant's
// table, whatever the list spells.
func TestDedicatedPoolStaysOnItsServer(t *testing.T) {
	first, second := testsvc.PostgresURL(t), testsvc.PostgresSecondURL(t)
	ctx := context.Background()
	db, role := "tw_pin_"+unique(), "tw_pin_role_"+unique()
	var hosts []string
	for _, base := range []string{first, second} {
		su, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		exec(t, su, "CREATE ROLE "+role+" LOGIN")
		exec(t, su, "CREATE DATABASE "+db+" OWNER "+role)
		t.Cleanup(func() {
			exec(t, su, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			exec(t, su, "DROP ROLE IF EXISTS "+role)
			su.Close(ctx)
		})
		u, _ := url.Parse(base)
		hosts = append(hosts, u.Host)
	}
	_, port1, _ := strings.Cut(hosts[0], ":")
	creds := map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", role, hosts[0], db)},
		// B's own server first, then A's under another spelling.
		tenancytest.TenantB: {Endpoint: fmt.Sprintf("postgres://%s@%s,localhost:%s/%s?sslmode=disable", role, hosts[1], port1, db)},
	}
	c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 2}}),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})))
	ctxA, ctxB := tenancy.WithTenant(ctx, tenancytest.TenantA), tenancy.WithTenant(ctx, tenancytest.TenantB)
	poolA, relA, err := c.Pool(ctxA)
	if err != nil {
		t.Fatal(err)
	}
	defer relA()
	if _, err := poolA.Exec(ctx, "CREATE TABLE a_secret (v text); INSERT INTO a_secret VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	poolB, relB, err := c.Pool(ctxB)
	if err != nil {
		t.Fatalf("B on its own server: %v", err)
	}
	defer relB()
	held, err := poolB.Acquire(ctx) // B's first connection: the second server
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	su2, err := pgx.Connect(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	defer su2.Close(ctx)
	exec(t, su2, "ALTER DATABASE "+db+" CONNECTION LIMIT 0")
	var v string
	err = poolB.QueryRow(ctx, "SELECT v FROM a_secret").Scan(&v)
	if err == nil {
		t.Fatalf("B read A's row %q through its host list", v)
	}
	if !strings.Contains(err.Error(), "dedicated_target_shared") {
		t.Fatalf("B's second connection: %v, want dedicated_target_shared", err)
	}
}
