package postgres_test

import (
	"bytes"
	"context"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestDedicatedStaticTablesAreTheTenants: a routed module whose routes
// and migrations name static tables keeps them in each tenant's own
// database, so they are the tenant's data. Export holds the route's rows
// and the migration's table; Offboard drops them (B's database keeps its
// own) and its report says what it checked; a table planted afterwards
// in the tenant's database is found left; the archive then restores the
// tenant on a freshly provisioned database.
func TestDedicatedStaticTablesAreTheTenants(t *testing.T) {
	ctx := context.Background()
	_, dsns := databases(t, 2, "")
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	resolve := resolverOf(map[tenancy.ID]routing.Credentials{a: {Endpoint: dsns[0]}, b: {Endpoint: dsns[1]}})
	steps := fstest.MapFS{"0001_audit.sql": {Data: []byte("CREATE TABLE audit (id bigserial PRIMARY KEY, note text);")}}
	var tn *modules.Tenants
	var docs *postgres.Documents[item]
	app, c := build(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{}), modules.AllowTeardown(), modules.Migrations(steps),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("ddocs")})),
		modules.Lifecycle(), fx.Populate(&tn, &docs))
	startApp(t, app)
	provision(t, c, a, b)
	db := func(i int) *pgx.Conn {
		conn, err := pgx.Connect(ctx, dsns[i])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(ctx) })
		return conn
	}
	dbA, dbB := db(0), db(1)
	for _, id := range []tenancy.ID{a, b} {
		if _, err := docs.Create(tenancy.WithTenant(ctx, id), "x", item{Name: "of " + id.Hex()[:4]}); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, dbA, "INSERT INTO audit (note) VALUES ('one'), ('two')")
	exec(t, dbB, "INSERT INTO audit (note) VALUES ('b')")

	archive := exportOf(t, tn, a)
	for _, want := range []string{`"route":"docs","family":"ddocs","tier":"dedicated","records":1`, `"route":"(schema)","family":"audit","records":2`} {
		if !bytes.Contains(archive, []byte(want)) {
			t.Errorf("A's archive does not hold %s:\n%s", want, archive)
		}
	}

	rep, err := tn.Offboard(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep) != 1 || !hasFamily(rep[0].Checked, "static tables") {
		t.Fatalf("the offboard report does not name the tenant database's tables: %+v", rep)
	}
	requireRows(t, dbA, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", 0)
	requireRows(t, dbB, "SELECT count(*) FROM public.audit", 1)
	if n, err := docs.Count(tenancy.WithTenant(ctx, b), document.Query{}); err != nil || n != 1 {
		t.Errorf("B's documents after A's offboard: %d %v", n, err)
	}

	exec(t, dbA, "CREATE TABLE public.planted (x int)")
	e, err := c.Verify(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Left) != 1 || e.Left[0].Family.Name != "static tables" {
		t.Fatalf("a table planted in A's database after its offboard: left %+v", e.Left)
	}
	exec(t, dbA, "DROP TABLE public.planted")

	if _, err := tn.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := tn.Import(ctx, a, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	if got := records(exportOf(t, tn, a)); !bytes.Equal(got, records(archive)) {
		t.Errorf("A restored:\n%s\nwant:\n%s", got, records(archive))
	}
}

func hasFamily(fs []migrate.Family, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

// TestDedicatedArchiveMigratesForward: a routed module whose migrations
// run in the static schema of each tenant's own database: A's archive of
// version 1 imports into B's database of an app at version 2, with step 2
// run on A's rows there, and nothing left of the staging schema.
func TestDedicatedArchiveMigratesForward(t *testing.T) {
	ctx := context.Background()
	_, dsns := databases(t, 2, "")
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	one := fstest.MapFS{"0001_audit.sql": {Data: []byte("CREATE TABLE audit (id bigserial PRIMARY KEY, note text NOT NULL);")}}
	two := fstest.MapFS{"0001_audit.sql": one["0001_audit.sql"],
		"0002_len.sql": {Data: []byte("ALTER TABLE audit ADD COLUMN len int; UPDATE audit SET len = length(note);")}}
	app := func(steps fstest.MapFS, id tenancy.ID, dsn string) (*modules.Tenants, *postgres.Documents[item]) {
		var tn *modules.Tenants
		var docs *postgres.Documents[item]
		a, c := build(t, postgres.Module("pg", postgres.Routed(resolverOf(map[tenancy.ID]routing.Credentials{id: {Endpoint: dsn}}), postgres.RoutedConfig{}),
			modules.AllowTeardown(), modules.Migrations(steps),
			postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("ddocs")})),
			modules.Lifecycle(), fx.Populate(&tn, &docs))
		startApp(t, a)
		provision(t, c, id)
		return tn, docs
	}
	oldTn, oldDocs := app(one, a, dsns[0])
	newTn, newDocs := app(two, b, dsns[1])
	if _, err := oldDocs.Create(tenancy.WithTenant(ctx, a), "x", item{Name: "of a"}); err != nil {
		t.Fatal(err)
	}
	dbA, err := pgx.Connect(ctx, dsns[0])
	must0(t, err)
	t.Cleanup(func() { dbA.Close(ctx) })
	exec(t, dbA, "INSERT INTO audit (note) VALUES ('one'), ('three')")
	archive := exportOf(t, oldTn, a)
	if err := newTn.Import(ctx, b, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	dbB, err := pgx.Connect(ctx, dsns[1])
	must0(t, err)
	t.Cleanup(func() { dbB.Close(ctx) })
	var got string
	must0(t, dbB.QueryRow(ctx, "SELECT string_agg(id || ':' || note || ':' || len, ',' ORDER BY id) FROM audit").Scan(&got))
	if got != "1:one:3,2:three:5" {
		t.Errorf("B's audit rows: %s, want A's with step 2 run on them", got)
	}
	if rec, err := newDocs.Get(tenancy.WithTenant(ctx, b), "x"); err != nil || rec.Value.Name != "of a" {
		t.Errorf("B's document: %+v %v", rec, err)
	}
	requireRows(t, dbB, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE '%\\_in'", 0)
}

// TestDedicatedOwnerRecordedOnTheServer: A's database records A as its
// owner. A replica whose resolver maps B to it (another process: its
// claims know nothing of A) is refused by the server's records when it
// reads, writes, provisions, exports, imports or tears down B there, and
// A's rows stay.
func TestDedicatedOwnerRecordedOnTheServer(t *testing.T) {
	ctx := context.Background()
	_, dsns := databases(t, 1, "")
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	steps := fstest.MapFS{"0001_audit.sql": {Data: []byte("CREATE TABLE audit (id bigserial PRIMARY KEY, note text);")}}
	replica := func(id tenancy.ID) (*fx.App, *modules.Tenants, *postgres.Client, *postgres.Documents[item]) {
		var tn *modules.Tenants
		var docs *postgres.Documents[item]
		app, c := build(t, postgres.Module("pg", postgres.Routed(resolverOf(map[tenancy.ID]routing.Credentials{id: {Endpoint: dsns[0]}}), postgres.RoutedConfig{}),
			modules.AllowTeardown(), modules.Migrations(steps),
			postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("ddocs")})),
			modules.Lifecycle(), fx.Populate(&tn, &docs))
		startApp(t, app)
		return app, tn, c, docs
	}
	first, tnA, cA, docsA := replica(a)
	provision(t, cA, a)
	if _, err := docsA.Create(tenancy.WithTenant(ctx, a), "x", item{Name: "a's"}); err != nil {
		t.Fatal(err)
	}
	archive := exportOf(t, tnA, a)
	// The first replica stops: its claims on the database go with it.
	must0(t, first.Stop(ctx))

	_, tnB, cB, docsB := replica(b)
	shared := func(what string, err error) {
		t.Helper()
		_ = tenancytest.RequireCode(t, err, tenancy.CodeDedicatedTargetShared, "postgres", "pg", "", "as its owner")
	}
	// Every new connection of B's pool reads the database's owner setting
	// with its identity, before any statement of B's: no read, no write.
	_, err := docsB.Get(tenancy.WithTenant(ctx, b), "x")
	shared("get", err)
	_, err = docsB.Create(tenancy.WithTenant(ctx, b), "y", item{Name: "b's"})
	shared("create", err)
	shared("provision", cB.Provision(ctx, b))
	var buf bytes.Buffer
	shared("export", tnB.Export(ctx, b, &buf))
	shared("import", tnB.Import(ctx, b, bytes.NewReader(archive)))
	shared("teardown", cB.Teardown(ctx, b))
	_, err = tnB.Offboard(ctx, b)
	shared("offboard", err)

	db, err := pgx.Connect(ctx, dsns[0])
	must0(t, err)
	t.Cleanup(func() { db.Close(ctx) })
	requireRows(t, db, "SELECT count(*) FROM public.ddocs", 1)

	// Where the setting could not be made (a provisioning user that does
	// not own the database), the catalog's record still refuses B's
	// provisioning, export, import and teardown.
	exec(t, db, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I RESET tenantwire.owner', current_database()); END $$")
	_, tnB2, cB2, _ := replica(b)
	record := func(what string, err error) {
		t.Helper()
		_ = tenancytest.RequireCode(t, err, tenancy.CodeDedicatedTargetShared, "postgres", "pg", "", "records as another tenant's")
	}
	record("provision", cB2.Provision(ctx, b))
	record("export", tnB2.Export(ctx, b, &buf))
	record("import", tnB2.Import(ctx, b, bytes.NewReader(archive)))
	record("teardown", cB2.Teardown(ctx, b))
	requireRows(t, db, "SELECT count(*) FROM public.ddocs", 1)
	requireRows(t, db, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = $1", 1, "tenantwire_owner_"+a.Hex())
}

// TestDedicatedTwoModulesInOneDatabase: two routed modules without
// migrations put their tables in the static schema of A's one database:
// each archives and tears down its own table only, so A's archive holds
// each once and one module's teardown leaves the other's rows.
func TestDedicatedTwoModulesInOneDatabase(t *testing.T) {
	ctx := context.Background()
	_, dsns := databases(t, 1, "")
	a := tenancytest.FreshTenant(t)
	resolve := resolverOf(map[tenancy.ID]routing.Credentials{a: {Endpoint: dsns[0]}})
	var tn *modules.Tenants
	var orders, billing *postgres.Documents[item]
	var ordersRunner *migrate.Runner
	app, _ := build(t,
		postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{}), modules.AllowTeardown(), postgres.NamedOnly(),
			postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.Shared("odocs")})),
		postgres.Module("billing", postgres.Routed(resolve, postgres.RoutedConfig{}), modules.AllowTeardown(), postgres.NamedOnly(),
			postgres.Document[item]("billing", postgres.DocumentConfig{Read: naming.Shared("bdocs")})),
		modules.Lifecycle(), fx.Populate(&tn), named("orders", &orders), named("billing", &billing), named("pg", &ordersRunner))
	startApp(t, app)
	if _, err := tn.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	ctxA := tenancy.WithTenant(ctx, a)
	for _, r := range []*postgres.Documents[item]{orders, billing} {
		if _, err := r.Create(ctxA, "x", item{Name: "a's"}); err != nil {
			t.Fatal(err)
		}
	}
	archive := exportOf(t, tn, a)
	for _, want := range []string{`"module":"pg","route":"orders","family":"odocs","tier":"dedicated","records":1`, `"module":"billing","route":"billing","family":"bdocs","tier":"dedicated","records":1`} {
		if !bytes.Contains(archive, []byte(want)) {
			t.Errorf("A's archive does not hold %s once:\n%s", want, lastLine(archive))
		}
	}
	if n := bytes.Count(archive, []byte(`"kind":"row"`)); n != 2 {
		t.Errorf("A's archive holds %d records, want 2:\n%s", n, archive)
	}
	must0(t, ordersRunner.Teardown(ctx, a))
	if _, err := billing.Get(ctxA, "x"); err != nil {
		t.Errorf("billing's record after the orders module's teardown: %v", err)
	}
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return b[bytes.LastIndexByte(b, '\n')+1:]
}

// TestArchiveRoundTripDedicated: a routed module, each tenant in a
// database of its own: A's rows (a route's static table and a
// migration's) come back under C in C's database with the same sections
// and reads, B's database is untouched, and nothing of C's names A.
func TestArchiveRoundTripDedicated(t *testing.T) {
	ctx := context.Background()
	_, dsns := databases(t, 3, "")
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	resolve := resolverOf(map[tenancy.ID]routing.Credentials{a: {Endpoint: dsns[0]}, b: {Endpoint: dsns[1]}, c: {Endpoint: dsns[2]}})
	steps := fstest.MapFS{"0001_audit.sql": {Data: []byte("CREATE TABLE audit (id bigserial PRIMARY KEY, note text);")}}
	var tn *modules.Tenants
	var docs *postgres.Documents[item]
	app, pg := build(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{}), modules.AllowTeardown(), modules.Migrations(steps),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("rdocs")})),
		modules.Lifecycle(), fx.Populate(&tn, &docs))
	startApp(t, app)
	provision(t, pg, a, b, c)
	for _, id := range []tenancy.ID{a, b} {
		for _, k := range []string{"x", "y"} {
			if _, err := docs.Create(tenancy.WithTenant(ctx, id), k, item{Name: k + " of " + id.Hex()[:4]}); err != nil {
				t.Fatal(err)
			}
		}
	}
	conn, err := pgx.Connect(ctx, dsns[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	exec(t, conn, "INSERT INTO audit (note) VALUES ('one'), ('two')")
	archive := tenancytest.CheckRoundTrip(t, tenancytest.RoundTrip{Tenants: tn, A: a, B: b, C: c,
		Read: func(ctx context.Context) (any, error) {
			recs, err := docs.List(ctx, document.Query{})
			out := make([]item, 0, len(recs))
			for _, r := range recs {
				out = append(out, r.Value)
			}
			return out, err
		}})
	for _, want := range []string{`"route":"docs","family":"rdocs","tier":"dedicated","records":2`, `"route":"(schema)","family":"audit","records":2`} {
		if !bytes.Contains(archive, []byte(want)) {
			t.Errorf("A's archive does not hold %s:\n%s", want, archive)
		}
	}
	dbC, err := pgx.Connect(ctx, dsns[2])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dbC.Close(ctx) })
	requireRows(t, dbC, "SELECT count(*) FROM public.audit", 2)
	requireRows(t, dbC, "SELECT count(*) FROM public.rdocs", 2)
}
