package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestDedicatedQuotedNamesAreDistinct: PostgreSQL database names are case
// sensitive ("Shop" and shop are two databases once quoted), so two
// tenants on them are both served and kept apart, while other spellings of
// the quoted name (a keyword/value DSN, a percent-encoded URL path, Params)
// are one target and refused. A rule that folded case would refuse the
// first pair; one that kept spellings apart would let the third tenant in.
func TestDedicatedQuotedNamesAreDistinct(t *testing.T) {
	su := superuser(t)
	upper, lower := "Tw_Case_"+unique(), ""
	lower = toLower(upper)
	for _, db := range []string{upper, lower} {
		exec(t, su, `CREATE DATABASE "`+db+`"`)
		t.Cleanup(func() { exec(t, su, `DROP DATABASE IF EXISTS "`+db+`" WITH (FORCE)`) })
	}
	u, _ := url.Parse(testsvcURL(t))
	tenantC, tenantD, tenantE := tenancy.MustParseID("ca5e0000-0000-4000-8000-00000000000c"), tenancy.MustParseID("ca5e0000-0000-4000-8000-00000000000d"), tenancy.MustParseID("ca5e0000-0000-4000-8000-00000000000e")
	creds := map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", u.Host, upper)},
		tenancytest.TenantB: {Endpoint: fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", u.Host, lower)},
		// Other spellings of A's database.
		tenantC: {Endpoint: fmt.Sprintf("host=%s port=%s user=postgres dbname='%s' sslmode=disable", u.Hostname(), u.Port(), upper)},
		tenantD: {Endpoint: fmt.Sprintf("postgres://postgres@%s/%%%X%s?sslmode=disable", u.Host, upper[0], upper[1:])},
		tenantE: {Endpoint: fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", u.Host), Params: map[string]string{"database": upper}},
	}
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 8, MaxConnsPerClient: 1}}),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})), &d)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	ctxA, ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantA), tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	if _, err := d.Create(ctxA, "a1", item{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(ctxB, "b1", item{Name: "b"}); err != nil {
		t.Fatalf("B on %q, beside A on %q: %v", lower, upper, err)
	}
	if _, err := d.Get(ctxB, "a1"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("B reading A's record: %v", err)
	}
	for _, tn := range []tenancy.ID{tenantC, tenantD, tenantE} {
		ctx := tenancy.WithTenant(context.Background(), tn)
		_, err := d.Get(ctx, "a1")
		requireSharedTarget(t, "tenant "+tn.String(), err)
	}
}

func toLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
