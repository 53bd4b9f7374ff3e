package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// ratioIters and ratioRounds: enough point reads per side and round that a
// neighbour's burst on this shared machine moves one round, not the median.
const (
	ratioIters  = 1500
	ratioRounds = 11
)

// decode is what a hand-written baseline does with the row, as the route does.
func decode(t testing.TB, raw []byte) {
	var v item
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
}

func must0(t testing.TB, err error) {
	if err != nil {
		t.Fatal(err)
	}
}

// TestRatioTagged: P1 (vs the same predicate by hand, same pool) and P3
// (vs row-level security as commonly written, and pipelined).
func TestRatioTagged(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	run := unique()
	table := "bench_" + run
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(table), Write: naming.Shared(table)})), &d)
	provision(t, c, tenancytest.TenantA)
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	must0(t, seed(ctx, d))
	pool, _, err := c.Pool(ctx)
	must0(t, err)
	tenant := tenancytest.TenantA.Bytes()
	ours := func(n int) {
		for i := range n {
			if _, err := d.Get(ctx, key(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	handSQL := "SELECT version, value FROM " + table + " WHERE tenant_id = $1 AND id = $2"
	ratio.Report(t, ratio.Pair{Label: "P1", Name: "pg-tagged-get", Iterations: ratioIters, Rounds: ratioRounds, Ours: ours, Baseline: func(n int) {
		for i := range n {
			var v int64
			var raw []byte
			must0(t, pool.QueryRow(ctx, handSQL, tenant, key(i)).Scan(&v, &raw))
			decode(t, raw)
		}
	}}, 1.05)

	// Row-level security applies to a non-superuser: the baseline runs as
	// one, on a table with the usual policy over a session setting.
	conn := superuser(t)
	role := "tw_rls_" + run
	rls := "rls_" + run
	exec(t, conn, "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() {
		exec(t, conn, "DROP TABLE IF EXISTS "+rls)
		exec(t, conn, "DROP ROLE IF EXISTS "+role)
	})
	exec(t, conn, "CREATE TABLE "+rls+" (tenant_id uuid NOT NULL, id text NOT NULL, version bigint NOT NULL, value jsonb NOT NULL, PRIMARY KEY (tenant_id, id))")
	exec(t, conn, "INSERT INTO "+rls+" SELECT * FROM "+table)
	exec(t, conn, "ALTER TABLE "+rls+" ENABLE ROW LEVEL SECURITY")
	exec(t, conn, "CREATE POLICY tenant ON "+rls+" USING (tenant_id = current_setting('app.tenant')::uuid)")
	exec(t, conn, "GRANT SELECT ON "+rls+" TO "+role)
	u, _ := url.Parse(testsvc.PostgresURL(t))
	u.User = url.User(role)
	rpool, err := pgxpool.New(context.Background(), u.String())
	must0(t, err)
	t.Cleanup(rpool.Close)
	rlsSQL := "SELECT version, value FROM " + rls + " WHERE id = $1"
	ratio.Report(t, ratio.Pair{Label: "P3", Name: "pg-tagged-vs-rls", Iterations: ratioIters, Rounds: ratioRounds, Ours: ours, Baseline: func(n int) {
		for i := range n {
			must0(t, pgx.BeginFunc(ctx, rpool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "SELECT set_config('app.tenant', $1, true)", tenancytest.TenantA.String()); err != nil {
					return err
				}
				var v int64
				var raw []byte
				if err := tx.QueryRow(ctx, rlsSQL, key(i)).Scan(&v, &raw); err != nil {
					return err
				}
				decode(t, raw)
				return nil
			}))
		}
	}}, 0.70)
	ratio.Report(t, ratio.Pair{Label: "P3", Name: "pg-tagged-vs-rls-pipelined", Iterations: ratioIters, Rounds: ratioRounds, Ours: ours, Baseline: func(n int) {
		for i := range n {
			b := &pgx.Batch{}
			b.Queue("SELECT set_config('app.tenant', $1, true)", tenancytest.TenantA.String())
			var v int64
			var raw []byte
			b.Queue(rlsSQL, key(i)).QueryRow(func(r pgx.Row) error { return r.Scan(&v, &raw) })
			must0(t, rpool.SendBatch(ctx, b).Close())
			decode(t, raw)
		}
	}}, 0.70)
}

// TestRatioNamespace: P2 (vs hand-written schema-qualified pgx) and P2b
// (vs SET search_path on every checkout).
func TestRatioNamespace(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	run := unique()
	prefix := "tw" + run + "_"
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})), &d)
	provision(t, c, tenancytest.TenantA)
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA) })
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	must0(t, seed(ctx, d))
	pool, _, err := c.Pool(ctx)
	must0(t, err)
	ours := func(n int) {
		for i := range n {
			if _, err := d.Get(ctx, key(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	ratio.Report(t, ratio.Pair{Label: "P2", Name: "pg-namespace-get", Iterations: ratioIters, Rounds: ratioRounds, Ours: ours, Baseline: func(n int) {
		for i := range n {
			tn, _ := tenancy.Require(ctx)
			stmt := "SELECT version, value FROM " + postgres.SchemaName(prefix, tn) + ".docs WHERE id = $1"
			var v int64
			var raw []byte
			must0(t, pool.QueryRow(ctx, stmt, key(i)).Scan(&v, &raw))
			decode(t, raw)
		}
	}}, 1.05)
	ratio.Report(t, ratio.Pair{Label: "P2b", Name: "pg-namespace-vs-search-path", Iterations: ratioIters, Rounds: ratioRounds, Ours: ours, Baseline: func(n int) {
		for i := range n {
			tn, _ := tenancy.Require(ctx)
			conn, err := pool.Acquire(ctx)
			must0(t, err)
			_, err = conn.Exec(ctx, "SET search_path TO "+postgres.SchemaName(prefix, tn))
			must0(t, err)
			var v int64
			var raw []byte
			must0(t, conn.QueryRow(ctx, "SELECT version, value FROM docs WHERE id = $1", key(i)).Scan(&v, &raw))
			conn.Release()
			decode(t, raw)
		}
	}}, 0.70)
}

// TestRatioRouted: P4, a routed point read cycling over 20 warm tenants,
// each on its own database (a pool never serves two tenants, and the
// server allows 100 connections), vs hand-written per-tenant pools (the
// target) and vs one fixed pool (information).
func TestRatioRouted(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	routedRatio(t, "pg-routed-get", 20)
}

func routedRatio(t *testing.T, name string, tenants int) {
	_, dsns := databases(t, tenants, "")
	table := "routed"
	ids := make([]tenancy.ID, tenants)
	own := map[tenancy.ID]string{}
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+10))
		own[ids[i]] = dsns[i]
	}
	resolve := func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: own[tn]}, nil
	}
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: tenants, MaxConnsPerClient: 1}}),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared(table), Write: naming.Shared(table)})), &d)
	provision(t, c, ids...)
	ctxs := make([]context.Context, tenants)
	for i, id := range ids {
		ctxs[i] = tenancy.WithTenant(context.Background(), id)
		must0(t, seed(ctxs[i], d)) // warms every pool too
	}
	fixed, err := pgxpool.New(context.Background(), dsns[0]+"&pool_max_conns=1")
	must0(t, err)
	t.Cleanup(fixed.Close)
	stmt := "SELECT version, value FROM " + table + " WHERE id = $1"
	ours := func(n int) {
		for i := range n {
			if _, err := d.Get(ctxs[i%tenants], key(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Hand-written dedicated routing over the same pools: a map from
	// tenant to its own pool, no fingerprints, no bounds.
	hand := map[tenancy.ID]*pgxpool.Pool{}
	for _, id := range ids {
		p, err := pgxpool.New(context.Background(), own[id]+"&pool_max_conns=1&application_name=hand")
		must0(t, err)
		t.Cleanup(p.Close)
		hand[id] = p
	}
	handRead := func(n int) {
		for i := range n {
			tn, _ := tenancy.Require(ctxs[i%tenants])
			var v int64
			var raw []byte
			must0(t, hand[tn].QueryRow(ctxs[i%tenants], stmt, key(i)).Scan(&v, &raw))
			decode(t, raw)
		}
	}
	handRead(tenants)
	ratio.Report(t, ratio.Pair{Label: "P4", Name: name + "-vs-hand-routed", Iterations: ratioIters, Rounds: ratioRounds, Ours: ours, Baseline: handRead}, 1.05)
	// One fixed pool is not a dedicated tier: information only.
	ratio.Inform(t, ratio.Pair{Label: "P4", Name: name, Iterations: ratioIters, Rounds: ratioRounds, Ours: ours, Baseline: func(n int) {
		ctx := context.Background()
		for i := range n {
			var v int64
			var raw []byte
			must0(t, fixed.QueryRow(ctx, stmt, key(i)).Scan(&v, &raw))
			decode(t, raw)
		}
	}})
}

const seeded = 200

func key(i int) string { return fmt.Sprint("k", i%seeded) }

func seed(ctx context.Context, d *postgres.Documents[item]) error {
	for i := range seeded {
		if _, err := d.Create(ctx, key(i), item{Name: "bench", N: i}); err != nil {
			return err
		}
	}
	return nil
}
