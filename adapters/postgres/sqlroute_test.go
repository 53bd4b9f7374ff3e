package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// sqlSteps is the service's own schema: tables its migrations create in
// every tenant's schema, named unqualified as sqlc writes them.
var sqlSteps = fstest.MapFS{"0001_items.sql": {Data: []byte(
	"CREATE TABLE items (id bigint PRIMARY KEY, v text NOT NULL);\n" +
		"CREATE TABLE notes (id bigserial PRIMARY KEY, item bigint NOT NULL REFERENCES items (id), body text NOT NULL);")}}

// sqlModule is a module with a SQL route at namespace (Login) over v.
func sqlModule(t *testing.T, v via, prefix string, extra ...postgres.Option) fx.Option {
	opts := append(v.dsn(t), postgres.SchemaPrefix(prefix), modules.AllowTeardown(), modules.Migrations(sqlSteps),
		postgres.SQLRoute("own", postgres.SQLConfig{Origin: tenancy.Compiled, Login: &postgres.DynamicLogin{Secret: loginSecret, MaxClients: 4}}))
	return postgres.Module("pg", append(opts, extra...)...)
}

// startSQL starts sqlModule for tenants A and B, each with one item.
func startSQL(t *testing.T, v via, extra []postgres.Option, targets ...any) (*postgres.Client, *postgres.SQL, string) {
	t.Helper()
	prefix := "tw" + unique() + "_"
	var own *postgres.SQL
	c := start(t, sqlModule(t, v, prefix, extra...), append(targets, named("own", &own))...)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA, tenancytest.TenantB) })
	for ctx, v := range map[context.Context]string{ctxA: "a-only", ctxB: "b-only"} {
		if _, err := own.Exec(ctx, "INSERT INTO items (id, v) VALUES (1, $1)", v); err != nil {
			t.Fatal(err)
		}
	}
	return c, own, prefix
}

// one reads the single text value sql returns through the route.
func one(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sql string, args ...any) (string, error) {
	var s string
	err := q.QueryRow(ctx, sql, args...).Scan(&s)
	return s, err
}

// TestSQLRouteResolvesInTheTenantSchema: unqualified names resolve in the
// bound tenant's schema, under its own role, and no tenant reads
// another's rows.
func TestSQLRouteResolvesInTheTenantSchema(t *testing.T) {
	_, own, prefix := startSQL(t, direct, nil)
	for ctx, want := range map[context.Context]string{ctxA: "a-only", ctxB: "b-only"} {
		if got, err := one(ctx, own, "SELECT v FROM items WHERE id = 1"); err != nil || got != want {
			t.Errorf("read %q %v, want %q", got, err, want)
		}
	}
	roleA := postgres.RoleName(prefix, tenancytest.TenantA)
	if got, err := one(ctxA, own, "SELECT session_user::text || ' ' || current_user::text || ' ' || current_schema()::text"); err != nil ||
		got != roleA+" "+roleA+" "+postgres.SchemaName(prefix, tenancytest.TenantA) {
		t.Errorf("A's call runs as %q (%v)", got, err)
	}
	if _, err := own.Exec(context.Background(), "SELECT 1"); !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Errorf("a call with no tenant: %v, want tenant_unbound", err)
	}
	rows, err := own.Query(ctxA, "SELECT v FROM items")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(vs) != 1 || vs[0] != "a-only" {
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
	if got, err := one(ctxA, own, "SELECT count(*)::text FROM items"); err != nil || got != "1" {
		t.Errorf("B's copy reached A: %q %v", got, err)
	}
}

// escapes are statements that try to leave the tenant's schema or role,
// run as tenant A against tenant B's data. Each reads B's row when run
// unconfined (the module's own user with A's search path: the control),
// and is refused by the server on the route.
func escapes(prefix string) map[string]string {
	schemaB := pgx.Identifier{postgres.SchemaName(prefix, tenancytest.TenantB)}.Sanitize()
	roleB := postgres.RoleName(prefix, tenancytest.TenantB)
	readB := "SELECT v FROM " + schemaB + ".items WHERE id = 1"
	return map[string]string{
		"qualified read":        readB,
		"qualified write":       "UPDATE " + schemaB + ".items SET v = v WHERE id = 1 RETURNING v",
		"reset role":            "RESET ROLE; " + readB,
		"set role":              "SET ROLE " + roleB + "; " + readB,
		"session authorization": "SET SESSION AUTHORIZATION " + roleB + "; " + readB,
		"search_path":           "SELECT set_config('search_path', '" + postgres.SchemaName(prefix, tenancytest.TenantB) + "', false); SELECT v FROM items WHERE id = 1",
		"set_config role":       "SELECT set_config('role', '" + roleB + "', false); " + readB,
		"security definer":      "SELECT " + schemaB + ".peek()",
		"pg_read_file":          "SELECT pg_read_file('PG_VERSION'); SELECT 'b-only'",
		"copy to program":       "COPY (SELECT 'x') TO PROGRAM 'cat'; SELECT 'b-only'",
	}
}

// TestSQLRouteEscapesAreRefusedByTheServer: see escapes.
func TestSQLRouteEscapesAreRefusedByTheServer(t *testing.T) { sqlEscapes(t, direct) }

// TestSQLRouteEscapesThroughPgBouncer: the same behind PgBouncer in
// transaction mode, where the tenant's server sessions are its login's.
func TestSQLRouteEscapesThroughPgBouncer(t *testing.T) { sqlEscapes(t, throughPgBouncer) }

func sqlEscapes(t *testing.T, v via) {
	_, own, prefix := startSQL(t, v, nil)
	su := superuser(t)
	schemaB := pgx.Identifier{postgres.SchemaName(prefix, tenancytest.TenantB)}.Sanitize()
	exec(t, su, "CREATE FUNCTION "+schemaB+".peek() RETURNS text LANGUAGE sql SECURITY DEFINER AS $$ SELECT v FROM "+schemaB+".items WHERE id = 1 $$")
	for name, text := range escapes(prefix) {
		t.Run(name, func(t *testing.T) {
			// The control: the same text, unconfined, reaches B's row.
			ctl, err := su.Begin(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = ctl.Rollback(context.Background()) }()
			exec(t, ctl.Conn(), "SET LOCAL search_path = "+pgx.Identifier{postgres.SchemaName(prefix, tenancytest.TenantA)}.Sanitize())
			if got := lastText(t, ctl.Conn(), text); got != "b-only" {
				t.Fatalf("the control did not reach B's row (%q): the case tests nothing", got)
			}
			_ = ctl.Rollback(context.Background())
			res, err := own.Exec(ctxA, text)
			if err == nil {
				t.Fatalf("A's route ran %q: %v", text, res)
			}
			// Refused by the server's privileges (or a name it cannot
			// resolve), not by some accident of the text.
			if pe, ok := errors.AsType[*pgconn.PgError](err); !ok || pe.Code != "42501" && pe.Code != "42P01" {
				t.Errorf("refused for another reason: %v", err)
			}
		})
	}
	if got, err := one(ctxB, own, "SELECT v FROM items WHERE id = 1"); err != nil || got != "b-only" {
		t.Errorf("B's row after A's attempts: %q %v", got, err)
	}
}

// lastText runs text (several statements, simple protocol) and returns
// the first column of the last result's first row.
func lastText(t *testing.T, conn *pgx.Conn, text string) string {
	res, err := conn.PgConn().Exec(context.Background(), text).ReadAll()
	if err != nil || len(res) == 0 {
		t.Fatalf("control %q: %v", text, err)
	}
	last := res[len(res)-1]
	if len(last.Rows) == 0 {
		return ""
	}
	return string(last.Rows[0][0])
}

// TestSQLRouteLeavesNothingForTheNextTenant: what a call leaves on its
// session (a temporary table shadowing the tenant's, a prepared
// statement, a WITH HOLD cursor, a LISTEN) stays in sessions of the
// tenant's own login, which no other tenant's call is given.
func TestSQLRouteLeavesNothingForTheNextTenant(t *testing.T) {
	for _, v := range []via{direct, throughPgBouncer} {
		_, own, _ := startSQL(t, v, nil)
		for _, text := range []string{
			"CREATE TEMP TABLE items (id bigint, v text); INSERT INTO items VALUES (1, 'a-temp')",
			"PREPARE leak AS SELECT 'a-prepared'::text",
			"DECLARE leak CURSOR WITH HOLD FOR SELECT 'a-cursor'::text",
			"LISTEN leak",
		} {
			// Several times, so A's calls spread over A's connections.
			for range 4 {
				if _, err := own.Exec(ctxA, text); err != nil && !strings.Contains(err.Error(), "already exists") {
					t.Fatalf("%s: %v", text, err)
				}
			}
		}
		for range 8 {
			if got, err := one(ctxB, own, "SELECT v FROM items WHERE id = 1"); err != nil || got != "b-only" {
				t.Errorf("B read %q %v: A's temporary table shadowed B's", got, err)
			}
			if got, err := one(ctxB, own, "EXECUTE leak"); err == nil {
				t.Errorf("B ran A's prepared statement: %q", got)
			}
			if _, err := own.Exec(ctxB, "FETCH ALL FROM leak"); err == nil {
				t.Errorf("B fetched from A's cursor")
			}
			if got, err := one(ctxB, own, "SELECT count(*)::text FROM pg_listening_channels()"); err != nil || got != "0" {
				t.Errorf("B's session listens on %s channels (%v)", got, err)
			}
		}
	}
}

// TestSQLRouteInUnitOfWork: InTx covers the SQL route's calls and the
// module's own routes in one transaction, still under the tenant's role.
func TestSQLRouteInUnitOfWork(t *testing.T) {
	var k *postgres.Counter
	c, own, prefix := startSQL(t, direct, []postgres.Option{postgres.CounterRoute("k", postgres.CounterConfig{Table: naming.PerTenant("k")})}, named("k", &k))
	unitCovers(t, c, own, k, func(ctx context.Context) {
		if got, err := one(ctx, own, "SELECT current_user::text"); err != nil || got != postgres.RoleName(prefix, tenancytest.TenantA) {
			t.Errorf("inside the unit the route runs as %q (%v)", got, err)
		}
	})
}

// unitCovers runs a unit of work of A that writes through the SQL route
// own and the counter k, checking inside it with where: rolled back it
// keeps neither write, committed both, and B's table is untouched.
func unitCovers(t *testing.T, c *postgres.Client, own *postgres.SQL, k *postgres.Counter, where func(ctx context.Context)) {
	t.Helper()
	boom := errors.New("boom")
	work := func(ctx context.Context, fail error) error {
		return c.InTx(ctx, func(ctx context.Context) error {
			if _, err := own.Exec(ctx, "INSERT INTO items (id, v) VALUES (7, 'in-unit')"); err != nil {
				return err
			}
			if _, err := k.Add(ctx, "items", 1); err != nil {
				return err
			}
			where(ctx)
			return fail
		})
	}
	if err := work(ctxA, boom); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if got, _ := one(ctxA, own, "SELECT count(*)::text FROM items WHERE id = 7"); got != "0" {
		t.Errorf("the rolled-back unit kept the route's row")
	}
	if n, err := k.Get(ctxA, "items"); err != nil || n != 0 {
		t.Errorf("the rolled-back unit kept the counter: %d %v", n, err)
	}
	if err := work(ctxA, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := one(ctxA, own, "SELECT v FROM items WHERE id = 7"); got != "in-unit" {
		t.Errorf("the committed unit lost the route's row: %q", got)
	}
	if n, err := k.Get(ctxA, "items"); err != nil || n != 1 {
		t.Errorf("the committed unit lost the counter: %d %v", n, err)
	}
	if got, _ := one(ctxB, own, "SELECT count(*)::text FROM items WHERE id = 7"); got != "0" {
		t.Errorf("A's unit wrote B's table")
	}
}

// TestSQLRouteWiring: the origin must be declared and known; compiled
// needs namespace, raw dedicated; a plain client needs Login.
func TestSQLRouteWiring(t *testing.T) {
	login := &postgres.DynamicLogin{Secret: loginSecret}
	mod := func(sc postgres.SQLConfig) fx.Option {
		return postgres.Module("pg", postgres.Connect(nowhere), postgres.SQLRoute("own", sc))
	}
	tenancytest.RequireRefused(t, tenancy.CodeStatementOriginUnknown, mod(postgres.SQLConfig{Login: login}))
	tenancytest.RequireRefused(t, tenancy.CodeStatementOriginUnknown, mod(postgres.SQLConfig{Origin: tenancy.Origin(9), Login: login}))
	tenancytest.RequireRefused(t, tenancy.CodeStatementOriginFloor, mod(postgres.SQLConfig{Origin: tenancy.Raw, Login: login}))
	tenancytest.RequireRefused(t, postgres.CodeSQLUnconfined, mod(postgres.SQLConfig{Origin: tenancy.Compiled}))
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, mod(postgres.SQLConfig{Origin: tenancy.Compiled, Login: &postgres.DynamicLogin{Secret: loginSecret[:31]}}))
	tenancytest.RequireWires(t, mod(postgres.SQLConfig{Origin: tenancy.Compiled, Login: login}))
	routed := func(sc postgres.SQLConfig, extra ...postgres.Option) fx.Option {
		return postgres.Module("pg", append([]postgres.Option{postgres.Routed(resolveNowhere, postgres.RoutedConfig{}), postgres.SQLRoute("own", sc)}, extra...)...)
	}
	dedicated := modules.RequiredIsolation(tenancy.Dedicated)
	tenancytest.RequireWires(t, routed(postgres.SQLConfig{Origin: tenancy.Raw}, dedicated))
	tenancytest.RequireWires(t, routed(postgres.SQLConfig{Origin: tenancy.Compiled}, dedicated))
	tenancytest.RequireRefused(t, tenancy.CodeStatementOriginUnknown, routed(postgres.SQLConfig{}))
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, routed(postgres.SQLConfig{Origin: tenancy.Raw, Login: login}))
	// Below dedicated the floors refuse what needs it: raw text, or a
	// module that requires it.
	e := tenancytest.RequireRefused(t, tenancy.CodeStatementOriginFloor, mod(postgres.SQLConfig{Origin: tenancy.Raw, Login: login}))
	if e.Module != "pg" || e.Route != "own" || !e.Tiers || e.Reached != tenancy.Namespace || e.Required != tenancy.Dedicated || e.Fix == "" {
		t.Errorf("the raw route's refusal: %+v", e)
	}
	e = tenancytest.RequireRefused(t, tenancy.ValidationFailed("postgres"), postgres.Module("pg", postgres.Connect(nowhere), dedicated,
		postgres.SQLRoute("own", postgres.SQLConfig{Origin: tenancy.Compiled, Login: login})))
	if e.Route != "own" || !e.Tiers || e.Reached != tenancy.Namespace || e.Required != tenancy.Dedicated || e.Fix == "" {
		t.Errorf("the namespace route under a dedicated floor: %+v", e)
	}
	// Behind a transaction pooler the tenant's search path cannot hold.
	for _, o := range []tenancy.Origin{tenancy.Compiled, tenancy.Raw} {
		e := tenancytest.RequireRefused(t, postgres.CodeSQLSearchPathPooled, routed(postgres.SQLConfig{Origin: o}, postgres.BehindTransactionPooler()))
		floor, _ := o.Floor()
		if e.Module != "pg" || e.Route != "own" || !e.Tiers || e.Reached != tenancy.Dedicated || e.Required != floor || e.Origin != o || e.Fix == "" {
			t.Errorf("%s behind a pooler: %+v", o, e)
		}
	}
}

// TestSQLRouteTiersInTheMatrix: the live matrix says what each wiring
// of the route reaches.
func TestSQLRouteTiersInTheMatrix(t *testing.T) {
	var m floors.Matrix
	app := fx.New(fx.NopLogger,
		postgres.Module("ns", postgres.Connect(nowhere), postgres.SQLRoute("own", postgres.SQLConfig{Origin: tenancy.Compiled, Login: &postgres.DynamicLogin{Secret: loginSecret}})),
		postgres.Module("ded", postgres.Routed(resolveNowhere, postgres.RoutedConfig{}), postgres.SQLRoute("raw", postgres.SQLConfig{Origin: tenancy.Raw})),
		fx.Invoke(func(l modules.Live) { m = l.Matrix() }))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]tenancy.Tier{"own": tenancy.Namespace, "raw": tenancy.Dedicated}
	for _, r := range m.Rows {
		if w, ok := want[r.Route]; !ok || r.Reached != w {
			t.Errorf("row %+v, want reached %s", r, w)
		}
		delete(want, r.Route)
	}
	if len(want) != 0 {
		t.Errorf("routes missing from the matrix: %v", want)
	}
}

// TestSQLRouteTablesAreInTheErasureInventory: the service's own tables
// and its role are families of the tenant's data; Teardown drops them
// and Verify finds none left.
func TestSQLRouteTablesAreInTheErasureInventory(t *testing.T) {
	c, _, _ := startSQL(t, direct, nil)
	before, err := c.Verify(context.Background(), tenancytest.TenantA)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]int64{}
	for _, l := range before.Left {
		left[l.Family.Name] = l.Count
	}
	if left["tables"] != 3 { // items, notes and the migration history
		t.Fatalf("the inventory does not count the tenant's three tables: %+v", before.Left)
	}
	if left["role"] != 1 { // the SQL route's login role
		t.Fatalf("the inventory does not count the tenant's role: %+v", before.Left)
	}
	if err := c.Teardown(context.Background(), tenancytest.TenantA); err != nil {
		t.Fatal(err)
	}
	after, err := c.Verify(context.Background(), tenancytest.TenantA)
	if err != nil || len(after.Left) != 0 {
		t.Fatalf("after teardown: %+v %v", after, err)
	}
}

// sqlProbe is the conformance cell of the SQL route: its own module (a
// unit of work of a module with a SQL route runs on the tenant's login),
// the probe writing and reading a row of the service's own table.
func sqlProbe(t *testing.T, v via, tier tenancy.Tier) (tenancytest.Probe, error) {
	if tier == tenancy.Dedicated {
		return sqlDedicatedProbe(t, v)
	}
	susp := &modules.Suspensions{}
	_, own, _ := startSQL(t, v, []postgres.Option{modules.RequiredIsolation(tier)}, fx.Supply(susp))
	return sqlRouteProbe(own, susp), nil
}

// sqlRouteProbe writes and reads one row of items through the SQL route
// own, whose app's suspensions are susp.
func sqlRouteProbe(own *postgres.SQL, susp *modules.Suspensions) tenancytest.Probe {
	return tenancytest.Probe{
		Suspensions: susp,
		Write: func(ctx context.Context) error {
			_, err := own.Exec(ctx, "INSERT INTO items (id, v) VALUES (100, 'probe') ON CONFLICT (id) DO NOTHING")
			return err
		},
		Read: func(ctx context.Context) (bool, error) {
			n, err := one(ctx, own, "SELECT count(*)::text FROM items WHERE id = 100")
			return n == "1", err
		},
	}
}

// TestSQLRouteThroughPoolerWithForcedUser: a pooler that logs in to
// PostgreSQL as its own user would run the tenant's text as that user; the
// login connection is refused before any of it runs.
func TestSQLRouteThroughPoolerWithForcedUser(t *testing.T) {
	pg, err := pgx.ParseConfig(testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u := testsvc.StartPgBouncer(t, fmt.Sprintf("%s = host=%s port=%d user=%s", pg.Database, pg.Host, pg.Port, pg.User), "auth_type = any")
	forced := via{url: func(testing.TB) string { return u }, opts: []postgres.Option{postgres.BehindTransactionPooler()}}
	prefix := "tw" + unique() + "_"
	var own *postgres.SQL
	c := start(t, sqlModule(t, forced, prefix), named("own", &own))
	provision(t, c, tenancytest.TenantA)
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA) })
	got, err := one(ctxA, own, "SELECT session_user::text")
	if !errors.Is(err, postgres.CodeDynamicReadPooled) {
		t.Fatalf("the tenant's text ran in the pooler's own login: %q %v", got, err)
	}
}
