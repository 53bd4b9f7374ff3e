package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestDedicatedPoolerSpellingsRefused: A's database reached through a
// PgBouncer (by its name, through a [databases] alias naming it, through
// the shared pooler) and directly are one target, whichever comes first:
// the names differ (port, alias), so only the identity the server reports
// through the pooler refuses them.
func TestDedicatedPoolerSpellingsRefused(t *testing.T) {
	names, dsns := databases(t, 1, "")
	db := names[0]
	pg, _ := url.Parse(testsvc.PostgresURL(t))
	priv := testsvc.StartPgBouncer(t, fmt.Sprintf("* = host=%s port=%s\nalias_x = host=%s port=%s dbname=%s", pg.Hostname(), pg.Port(), pg.Hostname(), pg.Port(), db))
	pu, _ := url.Parse(priv)
	su, _ := url.Parse(testsvc.PgBouncerURL(t))
	at := func(base *url.URL, path string) routing.Credentials {
		v := *base
		v.Path = "/" + path
		return routing.Credentials{Endpoint: v.String()}
	}
	spell := map[string]routing.Credentials{
		"private pgbouncer, name": at(pu, db),
		"private alias":           at(pu, "alias_x"),
		"shared pgbouncer":        at(su, db),
	}
	for first, fc := range spell {
		t.Run(first, func(t *testing.T) {
			creds := map[tenancy.ID]routing.Credentials{tenancytest.TenantA: fc}
			ids := map[string]tenancy.ID{"direct": tenancy.MustParseID("9e0be000-0000-4000-8000-000000000099")}
			creds[ids["direct"]] = routing.Credentials{Endpoint: dsns[0]}
			i := 0
			for k, c := range spell {
				if k == first {
					continue
				}
				i++
				id := tenancy.MustParseID(fmt.Sprintf("9e0be000-0000-4000-8000-%012x", i))
				creds[id], ids[k] = c, id
			}
			var d *postgres.Documents[item]
			c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 8, MaxConnsPerClient: 1}}),
				postgres.BehindTransactionPooler(),
				modules.RequiredIsolation(tenancy.Dedicated),
				postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})), &d)
			provision(t, c, tenancytest.TenantA)
			if _, err := d.Create(tenancy.WithTenant(context.Background(), tenancytest.TenantA), "a-"+first, item{Name: "secret"}); err != nil {
				t.Fatal(err)
			}
			for k, id := range ids {
				r, err := d.Get(tenancy.WithTenant(context.Background(), id), "a-"+first)
				if tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
					t.Errorf("spelling %q of A's database: %+v, %v", k, r, err)
				}
			}
		})
	}
}
