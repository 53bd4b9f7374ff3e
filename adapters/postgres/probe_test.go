package postgres_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
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
	c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{MaxClients: 4, MaxConnsPerClient: 1}),
		postgres.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: postgres.Table("docs")})), &d)
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
