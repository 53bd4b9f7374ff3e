package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRatioScaleLifecycle measures, under `make bench` only, Provision
// throughput for namespace tenants (schema, a document table with its
// history table, a confined reader role) and MigrateAll throughput for a
// three-step migration over as many schemas. It prints
//
//	scale provision-postgres-namespace tenants=N per_sec=X
//	scale migrate-postgres-namespace tenants=N per_sec=X
//
// for each N of TENANTWIRE_SCALE_LIFECYCLE (default "1000,10000"), and
// drops what it created.
func TestRatioScaleLifecycle(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	counts := []int{1000, 10000}
	if s := os.Getenv("TENANTWIRE_SCALE_LIFECYCLE"); s != "" {
		n, err := strconv.Atoi(s)
		must0(t, err)
		counts = []int{n}
	}
	for _, n := range counts {
		t.Run(strconv.Itoa(n), func(t *testing.T) { scaleLifecycle(t, n) })
	}
}

func scaleLifecycle(t *testing.T, n int) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testsvc.PostgresURL(t))
	must0(t, err)
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	must0(t, err)
	t.Cleanup(pool.Close)
	f := newMigFixture(t)
	f.pool = pool
	reg, err := postgres.NewRegistry(pool, "reg_"+unique())
	must0(t, err)
	f.reg = reg
	tenants := make([]tenancy.ID, n)
	for i := range tenants {
		tenants[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-b000-%012x", i+1))
	}
	t.Cleanup(func() { dropTenants(t, pool, f.prefix, tenants) })
	o := migrate.Options{Concurrency: 8, Every: max(n/10, 1), Logger: testLogger(t)}

	prov := start(t, f.module(
		postgres.DynamicReadRoute("adhoc", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true}),
		postgres.Document[item]("hist", postgres.DocumentConfig{Read: naming.PerTenant("hdocs"), Write: naming.PerTenant("hdocs"), History: naming.PerTenant("hdocs_history")}),
	))
	rep, err := prov.ProvisionAll(ctx, tenants, o)
	must0(t, err)
	if rep.Done != n {
		t.Fatalf("provisioned %d of %d: %v", rep.Done, n, rep.Failures[:min(3, len(rep.Failures))])
	}
	fmt.Printf("scale provision-postgres-namespace tenants=%d per_sec=%.0f\n", n, rep.PerSecond())

	mig := start(t, f.module(modules.Migrations(f.steps(false))))
	rep, err = mig.MigrateAll(ctx, nil, o)
	must0(t, err)
	if rep.Done != n || len(rep.Changes) != 3*n {
		t.Fatalf("migrated %d of %d (%d steps): %v", rep.Done, n, len(rep.Changes), rep.Failures[:min(3, len(rep.Failures))])
	}
	fmt.Printf("scale migrate-postgres-namespace tenants=%d per_sec=%.0f\n", n, rep.PerSecond())
}

// dropTenants drops the tenants' schemas and roles, a batch per
// transaction (DROP SCHEMA takes a lock per object: one transaction for
// thousands of schemas would outgrow the lock table).
func dropTenants(t *testing.T, pool *pgxpool.Pool, prefix string, tenants []tenancy.ID) {
	ctx := context.Background()
	for i := 0; i < len(tenants); i += 100 {
		var b []byte
		for _, tn := range tenants[i:min(i+100, len(tenants))] {
			s, r := postgres.SchemaName(prefix, tn), postgres.RoleName(prefix, tn)
			b = fmt.Appendf(b, "DROP SCHEMA IF EXISTS %s CASCADE; DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '%s') THEN EXECUTE 'DROP OWNED BY %s'; EXECUTE 'DROP ROLE %s'; END IF; END $$;", s, r, r, r)
		}
		if _, err := pool.Exec(ctx, string(b)); err != nil {
			t.Logf("dropping tenants: %v", err)
		}
	}
}

// testLogger logs progress lines to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
