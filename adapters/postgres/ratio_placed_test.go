package postgres_test

import (
	"context"
	neturl "net/url"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRatioPlacements: P13, the placement lookup of a module with
// Placements against today's fixed-tier module, each tenant at one
// placement read by the same point read: A tagged, B namespace, C
// dedicated.
func TestRatioPlacements(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	p := newPlacedApp(t)
	// The fixed dedicated module reads C's own database too, a table of
	// its own there: the pair differs by the placement only.
	cdb, err := neturl.Parse(testsvc.PostgresURL(t))
	must0(t, err)
	cdb.Path = "/" + p.db
	dsns := []string{cdb.String()}
	run := unique()
	url := testsvc.PostgresURL(t)
	fixed := map[tenancy.ID]*postgres.Documents[item]{}
	var tagged, namespace, dedicated *postgres.Documents[item]
	ct := start(t, postgres.Module("pg", postgres.Connect(url),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("fx" + run)})), &tagged)
	provision(t, ct, tenancytest.TenantA)
	cn := start(t, postgres.Module("pg", postgres.Connect(url), postgres.SchemaPrefix("tx"+run+"_"), postgres.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.PerTenant("fx" + run)})), &namespace)
	provision(t, cn, tenancytest.TenantB)
	t.Cleanup(func() { teardown(t, cn, tenancytest.TenantB) })
	cd := start(t, postgres.Module("pg", postgres.Routed(resolverOf(map[tenancy.ID]routing.Credentials{tenancytest.TenantC: {Endpoint: dsns[0]}}),
		// The placed app's limits: the pair differs by the placement only.
		postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 2}}),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.PerTenant("fx" + run)})), &dedicated)
	provision(t, cd, tenancytest.TenantC)
	fixed[tenancytest.TenantA], fixed[tenancytest.TenantB], fixed[tenancytest.TenantC] = tagged, namespace, dedicated
	for _, c := range []struct {
		label, name string
		tenant      tenancy.ID
	}{{"P13", "pg-placed-tagged-get", tenancytest.TenantA}, {"P13", "pg-placed-namespace-get", tenancytest.TenantB}, {"P13", "pg-placed-dedicated-get", tenancytest.TenantC}} {
		ctx := tenancy.WithTenant(context.Background(), c.tenant)
		must0(t, seed(ctx, p.docs))
		must0(t, seed(ctx, fixed[c.tenant]))
		read := func(d *postgres.Documents[item]) func(int) {
			return func(n int) {
				for i := range n {
					if _, err := d.Get(ctx, key(i)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		ratio.Report(t, ratio.Pair{Label: c.label, Name: c.name, Iterations: ratioIters, Rounds: ratioRounds, Ours: read(p.docs), Baseline: read(fixed[c.tenant])}, 1.03)
	}
}
