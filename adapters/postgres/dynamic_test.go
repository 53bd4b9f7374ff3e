package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// dynSet is a module with a confined dynamic read and a tagged document
// route over a static table, the layout of the search_path incident.
type dynSet struct {
	c      *postgres.Client
	dyn    *postgres.DynamicRead
	docs   *postgres.Documents[item]
	prefix string
	table  string // the static documents table
}

func dynModule(t *testing.T, dsn, prefix, table string, dc postgres.DynamicReadConfig) dynSet {
	t.Helper()
	dc.PerTenantSchema, dc.TenantRole = true, true
	ds := dynSet{prefix: prefix, table: table}
	ds.c = start(t, postgres.Module("pg", postgres.Connect(dsn), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(table), Write: naming.Shared(table)}),
		postgres.DynamicReadRoute("dyn", dc)), &ds.docs, named("dyn", &ds.dyn))
	t.Cleanup(func() { teardown(t, ds.c, tenancytest.TenantA, tenancytest.TenantB) })
	return ds
}

// row runs text as a dynamic read and returns its first row.
func (ds dynSet) row(ctx context.Context, text string, args ...any) ([]any, error) {
	var out []any
	err := ds.dyn.Query(ctx, text, args, func(r pgx.Rows) error {
		for r.Next() {
			if out == nil {
				v, err := r.Values()
				if err != nil {
					return err
				}
				out = v
			}
		}
		return r.Err()
	})
	return out, err
}

var (
	ctxA = tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxB = tenancy.WithTenant(context.Background(), tenancytest.TenantB)
)

// TestDynamicReadLeavesNoSessionState replays the search_path incident:
// compiled text of A sets session state on its connection; nothing of it
// may reach a later read, and the next tenant's provisioning and writes
// must not land in A's schema. One connection per pool makes every call
// meet the connection the hostile text ran on.
func TestDynamicReadLeavesNoSessionState(t *testing.T) {
	run := unique()
	ds := dynModule(t, testsvc.PostgresURL(t)+"&pool_max_conns=1", "tw"+run+"_", "sd_"+run, postgres.DynamicReadConfig{MaxConns: 1})
	provision(t, ds.c, tenancytest.TenantA)
	schemaA := postgres.SchemaName(ds.prefix, tenancytest.TenantA)
	for _, text := range []string{
		"SELECT pg_catalog.set_config('search_path', '" + schemaA + "', false)",
		"SELECT pg_catalog.set_config('default_transaction_read_only', 'off', false)",
		"SELECT pg_catalog.set_config('statement_timeout', '4321', false)",
		"SELECT pg_catalog.pg_advisory_lock(4242)",
		"LISTEN tenantwire_probe",
		"PREPARE leftover AS SELECT 1",
		"DECLARE leftover CURSOR WITH HOLD FOR SELECT 1",
	} {
		// Whether the server accepts the text matters less than what stays.
		_, _ = ds.row(ctxA, text)
	}
	provision(t, ds.c, tenancytest.TenantB)
	got, err := ds.row(ctxB, `SELECT pg_catalog.current_setting('search_path'),
		pg_catalog.current_setting('default_transaction_read_only'),
		pg_catalog.current_setting('statement_timeout'),
		(SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements),
		(SELECT pg_catalog.count(*) FROM pg_catalog.pg_listening_channels()),
		(SELECT pg_catalog.count(*) FROM pg_catalog.pg_cursors WHERE name = 'leftover'),
		(SELECT pg_catalog.count(*) FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid())`)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{`"$user", public`, "on", "30s", int64(0), int64(0), int64(0), int64(0)}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("session state %d survived a dynamic read: got %v, want %v", i, got[i], want[i])
		}
	}
	su := superuser(t)
	var locks int
	if err := su.QueryRow(context.Background(), "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND objsubid = 1").Scan(&locks); err != nil || locks != 0 {
		t.Errorf("a dynamic read's session advisory lock outlived the call: %d %v", locks, err)
	}
	// The incident itself: B's static table and rows stay out of A's schema.
	if _, err := ds.docs.Create(ctxB, "b1", item{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	var inA bool
	if err := su.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", pgx.Identifier{schemaA, ds.table}.Sanitize()).Scan(&inA); err != nil || inA {
		t.Errorf("B's static table was created in A's schema (%v)", err)
	}
	var n int
	if err := su.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{"public", ds.table}.Sanitize()).Scan(&n); err != nil || n != 1 {
		t.Errorf("B's row is not in the static schema: %d %v", n, err)
	}
}

// TestDynamicReadConnectionServesOneTenant: some session state outlives
// DISCARD ALL. A custom setting's name stays defined (current_setting
// answers an empty string, not NULL), a loaded library stays loaded (its
// settings stay in pg_settings) and setseed fixes random()'s sequence.
// A's hostile text makes all three, loading through the role escape; B's
// next read on the route's only connection must observe none of them.
func TestDynamicReadConnectionServesOneTenant(t *testing.T) {
	run := unique()
	ds := dynModule(t, testsvc.PostgresURL(t)+"&pool_max_conns=1", "tw"+run+"_", "sd_"+run, postgres.DynamicReadConfig{MaxConns: 1})
	provision(t, ds.c, tenancytest.TenantA, tenancytest.TenantB)
	var seeded float64
	su := superuser(t)
	if err := su.QueryRow(context.Background(), "SELECT pg_catalog.setseed(0.5)::text").Scan(new(string)); err != nil {
		t.Fatal(err)
	}
	if err := su.QueryRow(context.Background(), "SELECT pg_catalog.random()").Scan(&seeded); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"SELECT pg_catalog.set_config('tw_probe.mark', 'a-secret', false)",
		"DO $$BEGIN PERFORM pg_catalog.set_config('role', 'none', true); LOAD 'auto_explain'; END$$",
		"SELECT pg_catalog.setseed(0.5)",
	} {
		if _, err := ds.row(ctxA, text); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
	}
	const probe = `SELECT pg_catalog.current_setting('tw_probe.mark', true),
		(SELECT pg_catalog.count(*) FROM pg_catalog.pg_settings WHERE name LIKE 'auto\_explain.%'),
		pg_catalog.random()`
	// The state was made, and DISCARD ALL left it: A's own next read, on
	// its own connection, still meets it.
	got, err := ds.row(ctxA, probe)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != "" || got[1] == int64(0) || got[2] != seeded {
		t.Fatalf("the hostile state was not made, so the probe proves nothing: %v", got)
	}
	if _, err := ds.row(ctxA, "SELECT pg_catalog.setseed(0.5)"); err != nil {
		t.Fatal(err)
	}
	got, err = ds.row(ctxB, probe)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != nil {
		t.Errorf("B sees A's custom setting name (current_setting answers %q, not NULL)", got[0])
	}
	if got[1] != int64(0) {
		t.Errorf("B sees the library A loaded: %v of its settings in pg_settings", got[1])
	}
	if got[2] == seeded {
		t.Errorf("B's random() follows the seed A set: %v", got[2])
	}
}

// TestDynamicReadWritesNothing: read-only mode does not refuse every write
// (large objects), and compiled text must not be able to turn it off; the
// route rolls back and refuses the call.
func TestDynamicReadWritesNothing(t *testing.T) {
	run := unique()
	ds := dynModule(t, testsvc.PostgresURL(t), "tw"+run+"_", "sd_"+run, postgres.DynamicReadConfig{})
	provision(t, ds.c, tenancytest.TenantA)
	su := superuser(t)
	got, err := ds.row(ctxA, "SELECT pg_catalog.lo_from_bytea(0, pg_catalog.convert_to(pg_catalog.repeat('x', 8388608), 'UTF8'))")
	if tenancy.CodeOf(err) != postgres.CodeDynamicReadWrote {
		t.Errorf("a large object written by a dynamic read: %v", err)
	}
	if len(got) == 1 {
		var kept int
		if err := su.QueryRow(context.Background(), "SELECT count(*) FROM pg_largeobject_metadata WHERE oid = $1", got[0]).Scan(&kept); err != nil || kept != 0 {
			t.Errorf("the large object %v outlived the read (%d, %v)", got[0], kept, err)
			exec(t, su, "SELECT lo_unlink($1)", got[0])
		}
	}
	for _, text := range []string{
		"SET TRANSACTION READ WRITE",
		"SELECT pg_catalog.set_config('transaction_read_only', 'off', true)",
	} {
		if _, err := ds.row(ctxA, text); err == nil || !strings.Contains(err.Error(), "read-write mode must be set before any query") {
			t.Errorf("%s: compiled text switched its transaction to read write (%v)", text, err)
		}
	}
	if _, err := ds.row(ctxA, "SELECT 1"); err != nil {
		t.Errorf("a plain read after refused ones: %v", err)
	}
}

// TestDynamicReadHoldsNoLock: a session advisory lock taken by compiled
// text on the provisioning key is gone when the call returns, so another
// replica's Provision does not wait for it.
func TestDynamicReadHoldsNoLock(t *testing.T) {
	run := unique()
	prefix, table := "tw"+run+"_", "sd_"+run
	ds := dynModule(t, testsvc.PostgresURL(t), prefix, table, postgres.DynamicReadConfig{})
	provision(t, ds.c, tenancytest.TenantA)
	if _, err := ds.row(ctxA, "SELECT pg_catalog.pg_advisory_lock(pg_catalog.hashtextextended($1, 0))", "tenantwire.provision."+prefix); err != nil {
		t.Fatal(err)
	}
	replica := dynModule(t, testsvc.PostgresURL(t), prefix, table, postgres.DynamicReadConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := replica.c.Provision(ctx, tenancytest.TenantB); err != nil {
		t.Errorf("another replica's Provision waited on a dynamic read's lock: %v", err)
	}
}

// TestDynamicReadTimeout: the route's statement timeout bounds compiled
// text, even text that lifts it within its own statement.
func TestDynamicReadTimeout(t *testing.T) {
	run := unique()
	ds := dynModule(t, testsvc.PostgresURL(t), "tw"+run+"_", "sd_"+run, postgres.DynamicReadConfig{Timeout: 200 * time.Millisecond})
	provision(t, ds.c, tenancytest.TenantA)
	for _, text := range []string{
		"SELECT pg_catalog.pg_sleep(5)",
		"SELECT pg_catalog.set_config('statement_timeout', '0', true), pg_catalog.pg_sleep(5)",
	} {
		began := time.Now()
		_, err := ds.row(ctxA, text)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" || time.Since(began) > 3*time.Second {
			t.Errorf("%s: not cut by the timeout after %v: %v", text, time.Since(began), err)
		}
	}
}

// TestDynamicReadRoleEscape states a known limit: the session user can
// switch roles, so compiled text that sets the role itself leaves the
// tenant's role and reads what the pool user reads (another tenant's
// schema here). Only a routed client, whose connections log in as the
// tenant, bounds hostile text. Catalog names of other tenants' schemas and
// tables are readable under the tenant's role, as for any PostgreSQL role.
// If either assertion starts failing, the limit moved: update the docs.
func TestDynamicReadRoleEscape(t *testing.T) {
	run := unique()
	ds := dynModule(t, testsvc.PostgresURL(t), "tw"+run+"_", "sd_"+run, postgres.DynamicReadConfig{})
	provision(t, ds.c, tenancytest.TenantA, tenancytest.TenantB)
	schemaB := postgres.SchemaName(ds.prefix, tenancytest.TenantB)
	exec(t, superuser(t), "CREATE TABLE "+pgx.Identifier{schemaB, "secret"}.Sanitize()+" AS SELECT 'b-only' AS v")
	direct := "SELECT v FROM " + pgx.Identifier{schemaB, "secret"}.Sanitize()
	if _, err := ds.row(ctxA, direct); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("A read B's schema under its own role: %v", err)
	}
	got, err := ds.row(ctxA, "SELECT pg_catalog.set_config('role', 'none', true), pg_catalog.query_to_xml($1, false, false, '')::text", direct)
	if err != nil || len(got) != 2 || !strings.Contains(got[1].(string), "b-only") {
		t.Errorf("known limit changed: resetting the role no longer reaches B's schema (%v, %v)", got, err)
	}
	got, err = ds.row(ctxA, "SELECT (SELECT pg_catalog.count(*) FROM pg_catalog.pg_namespace WHERE nspname = $1), "+
		"(SELECT pg_catalog.count(*) FROM pg_catalog.pg_class WHERE relnamespace = $1::regnamespace AND relname = 'secret')", schemaB)
	if err != nil || got[0] != int64(1) || got[1] != int64(1) {
		t.Errorf("known limit changed: A no longer sees B's schema and table names (%v, %v)", got, err)
	}
}

// TestFrameworkStatementsIgnoreSearchPath: the session's search_path names
// A's schema first, and that schema holds a table shaped like the static
// one and functions shadowing the text search calls. No framework
// statement (provisioning, documents, search, counters, analytics) may
// reach them.
func TestFrameworkStatementsIgnoreSearchPath(t *testing.T) {
	run := unique()
	prefix, docs, texts, counts := "tw"+run+"_", "sd_"+run, "st_"+run, "sc_"+run
	schemaA := postgres.SchemaName(prefix, tenancytest.TenantA)
	qa := func(name string) string { return pgx.Identifier{schemaA, name}.Sanitize() }
	su := superuser(t)
	exec(t, su, "CREATE SCHEMA "+pgx.Identifier{schemaA}.Sanitize())
	exec(t, su, "CREATE TABLE "+qa(docs)+" (tenant_id uuid NOT NULL, id text NOT NULL, version bigint NOT NULL, value jsonb NOT NULL, PRIMARY KEY (tenant_id, id))")
	for _, f := range []string{"to_tsvector(text, text) RETURNS tsvector", "websearch_to_tsquery(text, text) RETURNS tsquery"} {
		exec(t, su, "CREATE FUNCTION "+pgx.Identifier{schemaA}.Sanitize()+"."+f+" LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'captured'; END $$")
	}
	var (
		d     *postgres.Documents[item]
		x     *postgres.Search
		k     *postgres.Counter
		stats *postgres.Analytics
	)
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)+"&search_path="+schemaA+",public"),
		postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(docs), Write: naming.Shared(docs)}),
		postgres.SearchRoute("texts", postgres.SearchConfig{TenantAware: true, Read: naming.Shared(texts), Heap: naming.Shared(texts), Index: naming.Shared(texts + "_tsv")}),
		postgres.SearchRoute("own", postgres.SearchConfig{Read: naming.PerTenant("own"), Heap: naming.PerTenant("own"), Index: naming.PerTenant("own_tsv")}),
		postgres.CounterRoute("counts", postgres.CounterConfig{TenantAware: true, Table: naming.Shared(counts)}),
		postgres.AnalyticsRoute("stats", postgres.AnalyticsConfig{TenantAware: true, Source: naming.Shared(docs), Queries: map[string]postgres.Aggregate{
			"sum": {Agg: postgres.AggSum, Field: "n"}}}),
	), &d, named("texts", &x), named("counts", &k), named("stats", &stats))
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA, tenancytest.TenantB) })
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	if _, err := d.Create(ctxB, "b1", item{Name: "b", N: 3}); err != nil {
		t.Fatal(err)
	}
	if r, err := d.Get(ctxB, "b1"); err != nil || r.Value.N != 3 {
		t.Errorf("get: %v %v", r, err)
	}
	if err := x.Put(ctxB, "t1", "zebra crossing"); err != nil {
		t.Fatal(err)
	}
	if hits, err := x.Search(ctxB, "zebra", 5); err != nil || len(hits) != 1 {
		t.Errorf("search: %v %v", hits, err)
	}
	if v, err := k.Add(ctxB, "hits", 2); err != nil || v != 2 {
		t.Errorf("counter: %d %v", v, err)
	}
	if rows, err := stats.Run(ctxB, "sum"); err != nil || len(rows) != 1 || rows[0].Value != 3 {
		t.Errorf("analytics: %v %v", rows, err)
	}
	var shadowed int
	if err := su.QueryRow(context.Background(), "SELECT count(*) FROM "+qa(docs)).Scan(&shadowed); err != nil || shadowed != 0 {
		t.Errorf("B's document landed in the shadow table of A's schema: %d %v", shadowed, err)
	}
	for _, name := range []string{texts, counts} {
		var there bool
		if err := su.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", qa(name)).Scan(&there); err != nil || there {
			t.Errorf("static table %s was created in A's schema (%v)", name, err)
		}
	}
}

// TestRoutedDynamicReadLeavesNoSessionState: on a routed client a dynamic
// read shares the tenant's pool with the module's statements; its session
// changes are gone before the pool's next statement, and the module's
// cached statements still run after the reset.
func TestRoutedDynamicReadLeavesNoSessionState(t *testing.T) {
	var (
		d   *postgres.Documents[item]
		dyn *postgres.DynamicRead
	)
	c := start(t, postgres.Module("pg", postgres.Routed(twoDatabases(t), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 2, MaxConnsPerClient: 1}}),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs"), Write: naming.Shared("docs")}),
		postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{})), &d, named("dyn", &dyn))
	provision(t, c, tenancytest.TenantA)
	ds := dynSet{dyn: dyn}
	if _, err := d.Create(ctxA, "a1", item{N: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctxA, "a1"); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"SELECT pg_catalog.set_config('search_path', 'pg_catalog', false)",
		"PREPARE leftover AS SELECT 1",
		"SELECT pg_catalog.pg_advisory_lock(4243)",
	} {
		_, _ = ds.row(ctxA, text)
	}
	// The module's statement was prepared on this very connection before
	// the reset; it must still run.
	if r, err := d.Get(ctxA, "a1"); err != nil || r.Value.N != 1 {
		t.Fatalf("the module's statement after a dynamic read: %v %v", r, err)
	}
	got, err := ds.row(ctxA, `SELECT pg_catalog.current_setting('search_path'),
		(SELECT pg_catalog.count(*) FROM pg_catalog.pg_prepared_statements WHERE name = 'leftover'),
		(SELECT pg_catalog.count(*) FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND objid = 4243)`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{`"$user", public`, int64(0), int64(0)}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("session state survived a routed dynamic read: %v, want %v", got, want)
	}
}

// TestDynamicReadCountsItsPool: a dynamic read's own pool counts toward
// the module's worst case, so a budget that ignores it is refused.
func TestDynamicReadCountsItsPool(t *testing.T) {
	mod := func(budget int) fx.Option {
		return postgres.Module("pg", postgres.Connect(nowhere+"&pool_max_conns=4"), modules.ConnBudget(budget),
			postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true, MaxConns: 3}))
	}
	tenancytest.RequireRefused(t, tenancy.CodeConnectionBudgetExceeded, mod(6))
	tenancytest.RequireWires(t, mod(7))
}

// TestDynamicReadLogin: with Login, the session user is the tenant's role,
// so the role escape of TestDynamicReadRoleEscape is closed: resetting the
// role, or setting another tenant's, reaches nothing.
func TestDynamicReadLogin(t *testing.T) {
	run := unique()
	prefix := "tw" + run + "_"
	var dyn *postgres.DynamicRead
	c := start(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true,
			Login: &postgres.DynamicLogin{Secret: []byte(strings.Repeat("k", 32)), MaxClients: 2}})), named("dyn", &dyn))
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA, tenancytest.TenantB) })
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	ds := dynSet{dyn: dyn}
	schemaB := postgres.SchemaName(prefix, tenancytest.TenantB)
	su := superuser(t)
	exec(t, su, "CREATE TABLE "+pgx.Identifier{schemaB, "secret"}.Sanitize()+" AS SELECT 'b-only' AS v")
	exec(t, su, "GRANT SELECT ON "+pgx.Identifier{schemaB, "secret"}.Sanitize()+" TO "+pgx.Identifier{postgres.RoleName(prefix, tenancytest.TenantB)}.Sanitize())
	roleA := postgres.RoleName(prefix, tenancytest.TenantA)
	if got, err := ds.row(ctxA, "SELECT session_user::text, current_user::text"); err != nil || got[0] != roleA || got[1] != roleA {
		t.Fatalf("A's read does not log in as A's role: %v %v", got, err)
	}
	direct := "SELECT v FROM " + pgx.Identifier{schemaB, "secret"}.Sanitize()
	for _, text := range []string{
		"SELECT pg_catalog.set_config('role', 'none', true), pg_catalog.query_to_xml($1, false, false, '')::text",
		"SELECT pg_catalog.set_config('role', '" + postgres.RoleName(prefix, tenancytest.TenantB) + "', true), pg_catalog.query_to_xml($1, false, false, '')::text",
	} {
		if got, err := ds.row(ctxA, text, direct); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("A left its role and read B's schema: %v %v", got, err)
		}
	}
	if got, err := ds.row(ctxB, direct); err != nil || got[0] != "b-only" {
		t.Errorf("B's own read: %v %v", got, err)
	}
	var verifier string
	if err := su.QueryRow(context.Background(), "SELECT rolpassword FROM pg_authid WHERE rolname = $1", roleA).Scan(&verifier); err != nil || !strings.HasPrefix(verifier, "SCRAM-SHA-256$4096:") {
		t.Errorf("A's role has no SCRAM verifier: %q %v", verifier, err)
	}
}

// TestDynamicLoginWiring: Login needs a plain client, the tenant role and
// a real secret, and its pools count toward the worst case.
func TestDynamicLoginWiring(t *testing.T) {
	secret := []byte(strings.Repeat("k", 32))
	dyn := func(dc postgres.DynamicReadConfig) postgres.Option {
		dc.PerTenantSchema = true
		return postgres.DynamicReadRoute("dyn", dc)
	}
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, postgres.Module("pg", postgres.Routed(resolveNowhere, postgres.RoutedConfig{}),
		dyn(postgres.DynamicReadConfig{Login: &postgres.DynamicLogin{Secret: secret}})))
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, postgres.Module("pg", postgres.Connect(nowhere),
		dyn(postgres.DynamicReadConfig{TenantRole: true, Login: &postgres.DynamicLogin{Secret: secret[:31]}})))
	// Without TenantRole the route is unconfined as well as wiring_invalid.
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, postgres.Module("pg", postgres.Connect(nowhere),
		dyn(postgres.DynamicReadConfig{Login: &postgres.DynamicLogin{Secret: secret}})))
	login := func(budget int) fx.Option {
		return postgres.Module("pg", postgres.Connect(nowhere+"&pool_max_conns=4"), modules.ConnBudget(budget),
			dyn(postgres.DynamicReadConfig{TenantRole: true, MaxConns: 2, Login: &postgres.DynamicLogin{Secret: secret, MaxClients: 3}}))
	}
	tenancytest.RequireRefused(t, tenancy.CodeConnectionBudgetExceeded, login(9))
	tenancytest.RequireWires(t, login(10))
}

// TestDynamicReadOnCallerPool: with Pool, the dynamic read opens its own
// pool from the caller's settings and never borrows the caller's pool.
func TestDynamicReadOnCallerPool(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after the teardown, which runs on it
	run := unique()
	var dyn *postgres.DynamicRead
	c := start(t, postgres.Module("pg", postgres.Use(pool), postgres.SchemaPrefix("tw"+run+"_"), modules.AllowTeardown(),
		postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true})), named("dyn", &dyn))
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA) })
	provision(t, c, tenancytest.TenantA)
	before := pool.Stat().AcquireCount()
	if got, err := (dynSet{dyn: dyn}).row(ctxA, "SELECT pg_catalog.current_setting('default_transaction_read_only')"); err != nil || got[0] != "on" {
		t.Errorf("a dynamic read off its own pool: %v %v", got, err)
	}
	if n := pool.Stat().AcquireCount() - before; n != 0 {
		t.Errorf("the dynamic read borrowed the caller's pool %d times", n)
	}
}
