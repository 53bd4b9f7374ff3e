package postgres_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/tenancy"
)

// The concurrency pairs (C<tenants>-<name>): G goroutines issue the point
// reads of a side between them, concIters a round, on one pool of
// concConns connections that both sides share.
const (
	concConns  = 8
	concIters  = 3000
	concRounds = 11
)

// concGs are the goroutine counts of the pairs: 64 (the target) and 8, as
// many as the pool has connections.
var concGs = []int{64, 8}

// concTenants are the tenant counts: 1, and 1,000 cycled over.
var concTenants = []int{1, 1000}

func concName(base string, g int) string {
	if g == 64 {
		return base
	}
	return base + "-g" + strconv.Itoa(g)
}

func decodeErr(raw []byte) error {
	var v item
	return json.Unmarshal(raw, &v)
}

// TestRatioConcTagged: a tagged point read from G goroutines vs the same
// predicate by hand, on the same pool, over 1 and 1,000 tenants whose rows
// share the scale pairs' tagged table.
func TestRatioConcTagged(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	for _, tenants := range concTenants {
		t.Run(strconv.Itoa(tenants), func(t *testing.T) {
			var d *postgres.Documents[item]
			c := start(t, postgres.Module("pg", postgres.DSN(testsvc.PostgresURL(t)+"&pool_max_conns="+strconv.Itoa(concConns)),
				postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: postgres.Table(scaleTagged), Write: postgres.Table(scaleTagged)})), &d)
			provision(t, c, scaleTenant(0))
			conn := superuser(t)
			exec(t, conn, `INSERT INTO `+scaleTagged+` (tenant_id, id, version, value)
				SELECT ('00000000-0000-4000-9000-' || pg_catalog.lpad(pg_catalog.to_hex(g), 12, '0'))::uuid, 'k', 1, '{"name":"bench","n":1}'
				FROM pg_catalog.generate_series(1, $1::int) g ON CONFLICT DO NOTHING`, tenants)
			exec(t, conn, "ANALYZE "+scaleTagged)
			ctxs := make([]context.Context, tenants)
			for i := range ctxs {
				ctxs[i] = tenancy.WithTenant(context.Background(), scaleTenant(i))
			}
			pool, _, err := c.Pool(ctxs[0])
			must0(t, err)
			stmt := "SELECT version, value FROM " + scaleTagged + " WHERE tenant_id = $1 AND id = $2"
			ours := func(i int) error {
				_, err := d.Get(ctxs[i], "k")
				return err
			}
			hand := func(i int) error {
				tn, _ := tenancy.Require(ctxs[i])
				var v int64
				var raw []byte
				if err := pool.QueryRow(ctxs[i], stmt, tn.Bytes(), "k").Scan(&v, &raw); err != nil {
					return err
				}
				return decodeErr(raw)
			}
			concPairs(t, tenants, "pg-tagged-get", ours, hand)
		})
	}
}

// TestRatioConcNamespace: a namespace point read from G goroutines vs the
// schema-qualified statement by hand (prepared for 1 tenant, the exec mode
// for 1,000, as handMode), on the same pool, over the scale pairs' tenant
// schemas.
func TestRatioConcNamespace(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	for _, tenants := range concTenants {
		t.Run(strconv.Itoa(tenants), func(t *testing.T) {
			f := newScaleFleet(t, tenants)
			cfg, err := pgxpool.ParseConfig(testsvc.PostgresURL(t))
			must0(t, err)
			cfg.MaxConns = concConns
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			must0(t, err)
			t.Cleanup(pool.Close)
			var d *postgres.Documents[item]
			start(t, scaleModule(pool), &d)
			mode := handMode(tenants, 2)
			stmts := make([]string, tenants)
			for i, id := range f.ids {
				stmts[i] = "SELECT version, value FROM " + pgx.Identifier{postgres.SchemaName(scalePrefix, id)}.Sanitize() + ".docs WHERE id = $1"
			}
			ours := func(i int) error {
				_, err := d.Get(f.ctxs[i], "k")
				return err
			}
			hand := func(i int) error {
				var v int64
				var raw []byte
				if err := pool.QueryRow(f.ctxs[i], stmts[i], mode, "k").Scan(&v, &raw); err != nil {
					return err
				}
				return decodeErr(raw)
			}
			concPairs(t, tenants, "pg-namespace-get", ours, hand)
		})
	}
}

// concPairs warms both sides on every tenant, then reports the pair at
// each of concGs.
func concPairs(t *testing.T, tenants int, name string, ours, hand func(int) error) {
	for i := range tenants {
		must0(t, ours(i))
		must0(t, hand(i))
	}
	label := "C" + strconv.Itoa(tenants)
	for _, g := range concGs {
		// A subtest per G, so that -run can pick one pair to profile
		// (ratio.ProfileEnv).
		t.Run("g"+strconv.Itoa(g), func(t *testing.T) {
			ratio.ReportParallel(t, ratio.Pair{Label: label, Name: concName(name, g), Iterations: concIters, Rounds: concRounds,
				Cap: concCap, Ours: ratio.ParallelSide(t, g, tenants, ours), Baseline: ratio.ParallelSide(t, g, tenants, hand)}, 1.05, 5*concIters)
		})
	}
}

// concCap bounds each pair: eight of them in this file.
const concCap = 30 * time.Second
