package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
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

// concTenants are the tenant counts: 1, and 1,000 and 10,000 cycled over
// (10,000 is past the prepared budget and past pgx's statement cache by
// far; the scale pairs' fixtures, made once and kept).
var concTenants = []int{1, 1000, 10000}

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
// predicate by hand, on the same pool, over 1, 1,000 and 10,000 tenants
// whose rows share the scale pairs' tagged table.
func TestRatioConcTagged(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	for _, tenants := range concTenants {
		t.Run(strconv.Itoa(tenants), func(t *testing.T) {
			d, ctxs, pool := scaleTaggedFixture(t, tenants, concConns)
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
// for 1,000 and 10,000, as handMode), on the same pool, over the scale
// pairs' tenant schemas.
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

// concCap bounds each pair: twelve of them in this file, two in
// ratio_conc_churn_test.go.
const concCap = 30 * time.Second

// concRoutedTenants: each routed tenant needs a database of its own, made
// for the run and dropped after it, so the routed pair stays at the 20 of
// TestRatioRouted (C20), not 1,000.
const concRoutedTenants = 20

// TestRatioConcRouted: a routed point read from G goroutines cycling over
// 20 warm tenants, each on its own one-connection pool, vs hand-written
// per-tenant pools of one connection in a map that is never written while
// the pair runs (no lock, no bound, no fingerprint). Pools are never
// evicted on either side: this is the routing layer's shared fast path
// under concurrency, not churn.
func TestRatioConcRouted(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	const tenants = concRoutedTenants
	_, dsns := databases(t, tenants, "")
	ids := make([]tenancy.ID, tenants)
	ctxs := make([]context.Context, tenants)
	own := map[tenancy.ID]string{}
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+10))
		ctxs[i] = tenancy.WithTenant(context.Background(), ids[i])
		own[ids[i]] = dsns[i]
	}
	resolve := func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: own[tn]}, nil
	}
	const table = "routed"
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: tenants, MaxConnsPerClient: 1}}),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared(table), Write: naming.Shared(table)})), &d)
	provision(t, c, ids...)
	for _, ctx := range ctxs {
		_, err := d.Create(ctx, "k", item{Name: "bench"})
		must0(t, err)
	}
	hand := make(map[tenancy.ID]*pgxpool.Pool, tenants)
	for _, id := range ids {
		p, err := pgxpool.New(context.Background(), own[id]+"&pool_max_conns=1&application_name=hand")
		must0(t, err)
		t.Cleanup(p.Close)
		hand[id] = p
	}
	stmt := "SELECT version, value FROM " + table + " WHERE id = $1"
	ours := func(i int) error {
		_, err := d.Get(ctxs[i], "k")
		return err
	}
	handRead := func(i int) error {
		tn, _ := tenancy.Require(ctxs[i])
		var v int64
		var raw []byte
		if err := hand[tn].QueryRow(ctxs[i], stmt, "k").Scan(&v, &raw); err != nil {
			return err
		}
		return decodeErr(raw)
	}
	concPairs(t, tenants, "pg-routed-get", ours, handRead)
}
