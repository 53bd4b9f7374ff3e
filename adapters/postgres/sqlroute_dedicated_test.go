package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// ownDatabase is a dedicated tenant's database and the DSN of its own
// user, which owns it and is no superuser.
type ownDatabase struct{ name, dsn string }

// ownDatabases gives each tenant a login role of its own and a database
// that role owns and no other role may connect to: dedicated credentials
// as a service would hand them out, which the server, not the framework,
// keeps apart.
func ownDatabases(t *testing.T, tenants ...tenancy.ID) map[tenancy.ID]ownDatabase {
	t.Helper()
	su := superuser(t)
	base := testsvc.PostgresURL(t)
	run := unique()
	out := map[tenancy.ID]ownDatabase{}
	for _, tn := range tenants {
		name := "tw_sqld_" + run + "_" + tn.Hex()[:4]
		exec(t, su, "CREATE ROLE "+name+" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
		t.Cleanup(func() { exec(t, su, "DROP ROLE IF EXISTS "+name) })
		exec(t, su, "CREATE DATABASE "+name+" OWNER "+name)
		t.Cleanup(func() { exec(t, su, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
		exec(t, su, "REVOKE CONNECT, TEMPORARY ON DATABASE "+name+" FROM PUBLIC")
		u, _ := url.Parse(base)
		u.User, u.Path = url.User(name), "/"+name
		out[tn] = ownDatabase{name: name, dsn: u.String()}
	}
	return out
}

func resolveOwn(dbs map[tenancy.ID]ownDatabase) routing.Resolver {
	return func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
		if d, ok := dbs[tn]; ok {
			return routing.Credentials{Endpoint: d.dsn}, nil
		}
		return routing.Credentials{}, fmt.Errorf("unknown tenant %s", tn)
	}
}

// sqlDedicatedModule is a module with a SQL route of origin on a routed
// client over dbs, required to reach dedicated.
func sqlDedicatedModule(dbs map[tenancy.ID]ownDatabase, prefix string, origin tenancy.Origin, extra ...postgres.Option) fx.Option {
	opts := []postgres.Option{postgres.Routed(resolveOwn(dbs), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 2}}),
		modules.RequiredIsolation(tenancy.Dedicated), postgres.SchemaPrefix(prefix), modules.AllowTeardown(), modules.Migrations(sqlSteps),
		postgres.SQLRoute("own", postgres.SQLConfig{Origin: origin})}
	return postgres.Module("pg", append(opts, extra...)...)
}

// startSQLDedicated starts sqlDedicatedModule (raw text) for tenants A
// and B, each in its own database with one item.
func startSQLDedicated(t *testing.T, extra []postgres.Option, targets ...any) (*postgres.Client, *postgres.SQL, string, map[tenancy.ID]ownDatabase) {
	t.Helper()
	prefix := "tw" + unique() + "_"
	dbs := ownDatabases(t, tenancytest.TenantA, tenancytest.TenantB)
	var own *postgres.SQL
	c := start(t, sqlDedicatedModule(dbs, prefix, tenancy.Raw, extra...), append(targets, named("own", &own))...)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	for ctx, v := range map[context.Context]string{ctxA: "a-only", ctxB: "b-only"} {
		if _, err := own.Exec(ctx, "INSERT INTO items (id, v) VALUES (1, $1)", v); err != nil {
			t.Fatal(err)
		}
	}
	return c, own, prefix, dbs
}

// connectTo opens a connection to db's database as its superuser.
func connectTo(t *testing.T, db string) *pgx.Conn {
	t.Helper()
	u, _ := url.Parse(testsvc.PostgresURL(t))
	u.Path = "/" + db
	conn, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestSQLRouteDedicatedRunsInTheTenantDatabase: raw text on a routed
// client runs in the bound tenant's own database, as its own user, with
// unqualified names resolved in its schema there; neither tenant sees the
// other's rows through any method of the route, and no tenant bound fails
// closed.
func TestSQLRouteDedicatedRunsInTheTenantDatabase(t *testing.T) {
	_, own, prefix, dbs := startSQLDedicated(t, nil)
	for ctx, want := range map[context.Context]string{ctxA: "a-only", ctxB: "b-only"} {
		if got, err := one(ctx, own, "SELECT v FROM items WHERE id = 1"); err != nil || got != want {
			t.Errorf("read %q %v, want %q", got, err, want)
		}
	}
	a := dbs[tenancytest.TenantA].name
	if got, err := one(ctxA, own, "SELECT current_database()::text || ' ' || session_user::text || ' ' || current_schema()::text"); err != nil ||
		got != a+" "+a+" "+postgres.SchemaName(prefix, tenancytest.TenantA) {
		t.Errorf("A's call runs in %q (%v)", got, err)
	}
	if _, err := own.Exec(context.Background(), "SELECT 1"); !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Errorf("a call with no tenant: %v, want tenant_unbound", err)
	}
	rows, err := own.Query(ctxA, "SELECT v FROM items")
	if err != nil {
		t.Fatal(err)
	}
	if vs, err := pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(vs) != 1 || vs[0] != "a-only" {
		t.Errorf("A's rows %v %v", vs, err)
	}
	b := &pgx.Batch{}
	b.Queue("INSERT INTO notes (item, body) VALUES (1, 'n')")
	b.Queue("SELECT count(*)::text FROM notes")
	res := own.SendBatch(ctxA, b)
	if _, err := res.Exec(); err != nil {
		t.Fatal(err)
	}
	var n string
	if err := res.QueryRow().Scan(&n); err != nil || n != "1" {
		t.Errorf("batch count %q %v", n, err)
	}
	if err := res.Close(); err != nil {
		t.Fatal(err)
	}
	if k, err := own.CopyFrom(ctxB, pgx.Identifier{"items"}, []string{"id", "v"}, pgx.CopyFromRows([][]any{{int64(2), "b2"}})); err != nil || k != 1 {
		t.Errorf("copy %d %v", k, err)
	}
	tx, err := own.Begin(ctxB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctxB, "UPDATE items SET v = 'b-tx' WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctxB); err != nil {
		t.Fatal(err)
	}
	if got, err := one(ctxA, own, "SELECT count(*)::text FROM items"); err != nil || got != "1" {
		t.Errorf("B's writes reached A: %q %v", got, err)
	}
	if got, err := one(ctxB, own, "SELECT string_agg(v, ',' ORDER BY id) FROM items"); err != nil || got != "b-only,b-tx" {
		t.Errorf("B's rows %q %v", got, err)
	}
}

// TestSQLRouteDedicatedRefusesTheOtherTenantsObjects: A's text naming B's
// objects (its database, its schema, a search path to it) or the server's
// files fails on A's server session. Each text reads B's row when run in B's database (the
// control): the names are right, A's session cannot reach them.
func TestSQLRouteDedicatedRefusesTheOtherTenantsObjects(t *testing.T) {
	_, own, prefix, dbs := startSQLDedicated(t, nil)
	dbB := dbs[tenancytest.TenantB].name
	schemaB := postgres.SchemaName(prefix, tenancytest.TenantB)
	qualified := pgx.Identifier{schemaB, "items"}.Sanitize()
	texts := map[string]string{
		"other database": "SELECT v FROM " + pgx.Identifier{dbB, schemaB, "items"}.Sanitize() + " WHERE id = 1",
		"other schema":   "SELECT v FROM " + qualified + " WHERE id = 1",
		"other write":    "UPDATE " + qualified + " SET v = v WHERE id = 1 RETURNING v",
		"search_path":    "SELECT set_config('search_path', '" + schemaB + "', false); SELECT v FROM items WHERE id = 1",
		// The server's files and programs are outside every database:
		// the tenant's own user is no superuser.
		"pg_read_file":    "SELECT pg_read_file('PG_VERSION'); SELECT 'b-only'",
		"copy to program": "COPY (SELECT 'x') TO PROGRAM 'cat'; SELECT 'b-only'",
	}
	ctl := connectTo(t, dbB)
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			tx, err := ctl.Begin(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := lastText(t, tx.Conn(), text); got != "b-only" {
				t.Fatalf("the control did not reach B's row (%q): the case tests nothing", got)
			}
			_ = tx.Rollback(context.Background())
			res, err := own.Exec(ctxA, text)
			if err == nil {
				t.Fatalf("A's route ran %q: %v", text, res)
			}
			// Refused by the server: no such relation in A's database, no
			// reference across databases at all, or no privilege.
			if pe, ok := errors.AsType[*pgconn.PgError](err); !ok || pe.Code != "42P01" && pe.Code != "3F000" && pe.Code != "0A000" && pe.Code != "42501" {
				t.Errorf("refused for another reason: %v", err)
			}
		})
	}
	if got, err := one(ctxB, own, "SELECT v FROM items WHERE id = 1"); err != nil || got != "b-only" {
		t.Errorf("B's row after A's attempts: %q %v", got, err)
	}
}

// TestSQLRouteDedicatedInUnitOfWork: InTx covers the SQL route's calls
// and the module's own routes in one transaction in the tenant's
// database.
func TestSQLRouteDedicatedInUnitOfWork(t *testing.T) {
	var k *postgres.Counter
	c, own, _, dbs := startSQLDedicated(t, []postgres.Option{postgres.CounterRoute("k", postgres.CounterConfig{Table: naming.Shared("k")})}, named("k", &k))
	unitCovers(t, c, own, k, func(ctx context.Context) {
		if got, err := one(ctx, own, "SELECT current_database()::text"); err != nil || got != dbs[tenancytest.TenantA].name {
			t.Errorf("inside the unit the route runs in %q (%v)", got, err)
		}
	})
}

// TestSQLRouteDedicatedPlanAndOffboard: the dry run of a new dedicated
// tenant lists its schema and the migrations that create the service's
// tables in its database, and no role; offboarding it leaves none of its
// tables (nor their rows) in its database, the check having counted them,
// and B's stay.
func TestSQLRouteDedicatedPlanAndOffboard(t *testing.T) {
	prefix := "tw" + unique() + "_"
	dbs := ownDatabases(t, tenancytest.TenantA, tenancytest.TenantB)
	var (
		own     *postgres.SQL
		c       *postgres.Client
		tenants *modules.Tenants
	)
	start(t, sqlDedicatedModule(dbs, prefix, tenancy.Compiled), named("own", &own), named("pg", &c), modules.Lifecycle(), fx.Populate(&tenants))
	a := tenancytest.TenantA
	rep, err := c.ProvisionAll(context.Background(), []tenancy.ID{a}, migrate.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	plan := testsvc.Plan(rep)[a]
	// The owner record first: the database is A's before anything of A's is made.
	want := []string{"table public.tenantwire_owner_" + a.Hex(), "schema " + postgres.SchemaName(prefix, a), "step 1"}
	if fmt.Sprint(plan) != fmt.Sprint(want) {
		t.Errorf("A's plan %q, want %q", plan, want)
	}
	provision(t, c, a, tenancytest.TenantB)
	if rep, err := c.ProvisionAll(context.Background(), []tenancy.ID{a}, migrate.Options{DryRun: true}); err != nil || len(testsvc.Plan(rep)[a]) != 0 {
		t.Errorf("after provisioning: %q %v", testsvc.Plan(rep)[a], err)
	}
	for _, ctx := range []context.Context{ctxA, ctxB} {
		if _, err := own.Exec(ctx, "INSERT INTO items (id, v) VALUES (1, 'x'); INSERT INTO notes (item, body) VALUES (1, 'n')"); err != nil {
			t.Fatal(err)
		}
	}
	steps, err := tenants.Offboard(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]bool{}
	for _, l := range steps {
		if l.Module != "pg" {
			continue
		}
		for _, f := range l.Checked {
			checked[f.Name] = true
		}
		if len(l.Left) != 0 {
			t.Errorf("left after offboarding: %+v", l.Left)
		}
	}
	if !checked["tables"] || !checked["schema"] {
		t.Errorf("the check did not count the tenant's tables and schema: %v", checked)
	}
	var left int
	if err := connectTo(t, dbs[a].name).QueryRow(context.Background(),
		"SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 OR c.relname IN ('items', 'notes')",
		postgres.SchemaName(prefix, a)).Scan(&left); err != nil || left != 0 {
		t.Errorf("A's database keeps %d of its relations (%v)", left, err)
	}
	if got, err := one(ctxB, own, "SELECT count(*)::text FROM items"); err != nil || got != "1" {
		t.Errorf("B's rows after A's offboarding: %q %v", got, err)
	}
}

// sqlDedicatedProbe is the SQL route's conformance cell at dedicated.
func sqlDedicatedProbe(t *testing.T, v via) (tenancytest.Probe, error) {
	if len(v.opts) > 0 {
		return tenancytest.Probe{}, tenancytest.Unavailable("a routed SQL route behind a transaction pooler is refused at fx.New " +
			"(postgres_sql_search_path_pooled, TestSQLRouteWiring): the pooler does not keep the tenant's search path; the cell is probed directly")
	}
	susp := &modules.Suspensions{}
	_, own, _, _ := startSQLDedicated(t, nil, fx.Supply(susp))
	return sqlRouteProbe(own, susp), nil
}

// TestSQLRouteDedicatedSearchPathDoesNotHoldBehindPgBouncer: why the
// routed SQL route is refused behind a transaction pooler. The startup
// parameter its sessions log in with does not reach the server session
// through PgBouncer in transaction mode: the login is refused, or the
// session's search path is not the one asked for.
func TestSQLRouteDedicatedSearchPathDoesNotHoldBehindPgBouncer(t *testing.T) {
	cfg, err := pgx.ParseConfig(testsvc.PgBouncerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	want := `"tw_probe_schema"`
	cfg.RuntimeParams["search_path"] = want
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Logf("PgBouncer refused the login: %v", err)
		return
	}
	defer func() { _ = conn.Close(context.Background()) }()
	for range 4 { // statements outside a transaction, each on any server session
		var got string
		if err := conn.QueryRow(context.Background(), "SHOW search_path").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Logf("the server session's search path is %q", got)
			return
		}
	}
	t.Fatalf("this pooler keeps the search path %s: postgres_sql_search_path_pooled refuses more than it needs to here", want)
}

// TestSQLRouteDedicatedSearchPathIsTheModules: neither the tenant's DSN
// nor RoutedConfig.Configure moves the route's names out of the tenant's
// schema.
func TestSQLRouteDedicatedSearchPathIsTheModules(t *testing.T) {
	prefix := "tw" + unique() + "_"
	dbs := ownDatabases(t, tenancytest.TenantA)
	d := dbs[tenancytest.TenantA]
	d.dsn += "&search_path=public"
	dbs[tenancytest.TenantA] = d
	configure := func(pc *pgxpool.Config) { pc.ConnConfig.RuntimeParams["search_path"] = "public" }
	var own *postgres.SQL
	c := start(t, sqlDedicatedModule(dbs, prefix, tenancy.Raw,
		postgres.Routed(resolveOwn(dbs), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 2, MaxConnsPerClient: 1}, Configure: configure})), named("own", &own))
	provision(t, c, tenancytest.TenantA)
	if got, err := one(ctxA, own, "SELECT current_setting('search_path')"); err != nil || got != `"`+postgres.SchemaName(prefix, tenancytest.TenantA)+`"` {
		t.Errorf("A's search path %q (%v)", got, err)
	}
	if _, err := own.Exec(ctxA, "INSERT INTO items (id, v) VALUES (1, 'a')"); err != nil {
		t.Errorf("an unqualified write: %v", err)
	}
}
