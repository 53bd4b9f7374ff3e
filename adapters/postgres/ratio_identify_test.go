package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRatioRoutedNewClient: what a new routed client costs, the server's
// identity and the connection's pin included, against a hand-written
// pool opened for the same database, first read, closed. Information: a
// routed client opens once per tenant (and again after eviction or a
// credential change), never per call.
func TestRatioRoutedNewClient(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	_, dsns := databases(t, 1, "")
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolverOf(map[tenancy.ID]routing.Credentials{tenancytest.TenantA: {Endpoint: dsns[0]}}),
		postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 64, MaxConnsPerClient: 1}}),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})), &d)
	provision(t, c, tenancytest.TenantA)
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := d.Create(ctx, "k", item{Name: "v"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(dsns[0])
	must0(t, err)
	cfg.MaxConns = 1
	r := ratio.Inform(t, ratio.Pair{
		Label: "I1", Name: "pg-routed-new-client",
		Ours: func(n int) {
			for range n {
				c.Evict(tenancytest.TenantA)
				if _, err := d.Get(ctx, "k"); err != nil {
					t.Fatal(err)
				}
			}
		},
		Baseline: func(n int) {
			for range n {
				p, err := pgxpool.NewWithConfig(context.Background(), cfg.Copy())
				must0(t, err)
				var raw []byte
				must0(t, p.QueryRow(context.Background(), `SELECT value FROM docs WHERE id = $1`, "k").Scan(&raw))
				p.Close()
			}
		},
		Rounds: 9, Iterations: 60,
	})
	t.Logf("a new routed client and its first read: %.0f µs, a hand-written pool's: %.0f µs", r.OursNs/1e3, r.BaseNs/1e3)
}
