package postgres_test

import (
	"bytes"
	"context"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// notesSteps are a module's migrations up to n: 1 makes the table and
// seeds a row, 2 adds a column computed from the body, 3 renames the
// body. An archive of version 1 migrated forward must end as a tenant
// that ran all three on those rows.
func notesSteps(n int) fstest.MapFS {
	all := []string{
		"CREATE TABLE notes (id bigserial PRIMARY KEY, body text NOT NULL); INSERT INTO notes (body) VALUES ('seeded row');",
		"ALTER TABLE notes ADD COLUMN words int; UPDATE notes SET words = array_length(string_to_array(body, ' '), 1);",
		"ALTER TABLE notes RENAME COLUMN body TO text;",
	}
	names := []string{"0001_notes.sql", "0002_words.sql", "0003_text.sql"}
	fs := fstest.MapFS{}
	for i := range n {
		fs[names[i]] = &fstest.MapFile{Data: []byte(all[i])}
	}
	return fs
}

// notesApp is an app whose module's migrations run in each tenant's
// schema, at version n of notesSteps.
type notesApp struct {
	tenants *modules.Tenants
	c       *postgres.Client
	prefix  string
}

func newNotesApp(t *testing.T, n int, steps fstest.MapFS) notesApp {
	t.Helper()
	a := notesApp{prefix: "tw" + unique() + "_"}
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(a.prefix), modules.Migrations(steps), modules.AllowTeardown(),
		postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})),
		modules.Lifecycle(), fx.Populate(&a.tenants))
	startApp(t, app)
	a.c = c
	return a
}

func (a notesApp) notes(id tenancy.ID) string {
	return pgx.Identifier{postgres.SchemaName(a.prefix, id), "notes"}.Sanitize()
}

// TestArchiveImportMigratesForward: tenant A's archive, exported at
// migration version 1, imported as C into an app at version 3: C holds
// A's rows (the seeded one as A left it, gone when A deleted it) with the
// later steps run on them, its own history and sequences are the app's,
// and no staging schema is left. A step that fails on the archive's rows,
// and a truncated read, leave C as empty as it was; a rerun completes.
func TestArchiveImportMigratesForward(t *testing.T) {
	ctx := context.Background()
	db := superuser(t)
	old, cur := newNotesApp(t, 1, notesSteps(1)), newNotesApp(t, 3, notesSteps(3))
	a, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, old.c, a)
	provision(t, cur.c, c)
	exec(t, db, "UPDATE "+old.notes(a)+" SET body = 'edited seeded row here'")
	exec(t, db, "INSERT INTO "+old.notes(a)+" (body) VALUES ('one'), ('two words')")
	// C's seeded row: the tenant is empty but for what its migrations
	// wrote, which the emptiness check counts as data.
	exec(t, db, "DELETE FROM "+cur.notes(c))
	archive := exportOf(t, old.tenants, a)
	if !bytes.Contains(archive, []byte(`"version":1`)) {
		t.Fatalf("the archive does not record version 1:\n%s", archive)
	}

	// A step that fails on the archive's rows: nothing of C changes.
	failing := notesSteps(3)
	failing["0004_short.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE notes ADD CONSTRAINT short CHECK (length(text) < 12);")}
	strict := newNotesApp(t, 4, failing)
	d := tenancytest.FreshTenant(t)
	provision(t, strict.c, d)
	exec(t, db, "DELETE FROM "+strict.notes(d))
	if err := strict.tenants.Import(ctx, d, bytes.NewReader(archive)); err == nil {
		t.Fatal("an import whose step 4 fails on the archive's rows succeeded")
	}
	requireRows(t, db, "SELECT count(*) FROM "+strict.notes(d), 0)

	// Interrupted after each record in turn: C stays empty, and no
	// staging schema is left.
	var spool bytes.Buffer
	_, m, err := migrate.ReadArchive(bytes.NewReader(archive), &spool)
	if err != nil {
		t.Fatal(err)
	}
	var recs []migrate.Record
	for r, err := range migrate.RecordsOf(migrate.NewRecords(&spool, m).Module("pg")) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 3 {
		t.Fatalf("the archive holds %d records, want 3", len(recs))
	}
	for n := range len(recs) {
		if err := cur.c.Import(ctx, c, &failingIn{recs: recs, n: n, version: 1}); err == nil {
			t.Fatalf("an import interrupted after %d records succeeded", n)
		}
		requireRows(t, db, "SELECT count(*) FROM "+cur.notes(c), 0)
	}
	// A schema of the staging schema's name made beforehand (by whoever
	// could): the import does not write through it, it fails.
	staging := pgx.Identifier{postgres.SchemaName(cur.prefix, c) + "_in"}.Sanitize()
	exec(t, db, "CREATE SCHEMA "+staging)
	if err := cur.tenants.Import(ctx, c, bytes.NewReader(archive)); err == nil {
		t.Fatal("an import through a staging schema someone made succeeded")
	}
	requireRows(t, db, "SELECT count(*) FROM "+cur.notes(c), 0)
	exec(t, db, "DROP SCHEMA "+staging)

	if err := cur.tenants.Import(ctx, c, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := db.QueryRow(ctx, "SELECT string_agg(id || ':' || text || ':' || words, ',' ORDER BY id) FROM "+cur.notes(c)).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "1:edited seeded row here:4,2:one:1,3:two words:2"; got != want {
		t.Errorf("C's notes: %s, want %s", got, want)
	}
	var next int64
	if err := db.QueryRow(ctx, "INSERT INTO "+cur.notes(c)+" (text) VALUES ('new') RETURNING id").Scan(&next); err != nil || next != 4 {
		t.Errorf("C's next id: %d %v, want 4", next, err)
	}
	requireRows(t, db, "SELECT count(*) FROM "+pgx.Identifier{postgres.SchemaName(cur.prefix, c), "tenantwire_migrations"}.Sanitize()+" WHERE module = 'pg'", 3)
	requireRows(t, db, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE '%' || $1 || '%'", 0, c.Hex()+"_")
	// Imported once, C is not empty: a second import is refused.
	tenancytest.CheckArchiveRefused(t, cur.tenants, c, archive, tenancy.CodeArchiveTargetNotEmpty)
}

// TestArchiveImportVersionsRefused: an archive newer than the app is
// archive_version_ahead; one older than an app whose migrations run once
// on shared tables, or at a version its migrations do not have, is
// archive_mismatch; nothing is written.
func TestArchiveImportVersionsRefused(t *testing.T) {
	db := superuser(t)
	newer, older := newNotesApp(t, 3, notesSteps(3)), newNotesApp(t, 1, notesSteps(1))
	a, c, e := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, newer.c, a)
	provision(t, older.c, c)
	exec(t, db, "DELETE FROM "+older.notes(c))
	archive := exportOf(t, newer.tenants, a)
	refusedWith(t, older.tenants, c, archive, tenancy.CodeArchiveVersionAhead, "version 3, newer than the app's 1")
	// The same archive edited to claim version 1, resealed: its rows, of
	// version 3's shape, do not fit the staging tables of version 1, and
	// nothing is written.
	lied := tenancytest.Reseal(t, bytes.Replace(archive, []byte(`"backend":"postgres","version":3`), []byte(`"backend":"postgres","version":1`), 1))
	if !bytes.Contains(lied, []byte(`"version":1`)) {
		t.Fatal("the edit did not take")
	}
	current := newNotesApp(t, 3, notesSteps(3))
	h := tenancytest.FreshTenant(t)
	provision(t, current.c, h)
	exec(t, db, "DELETE FROM "+current.notes(h))
	if err := current.tenants.Import(context.Background(), h, bytes.NewReader(lied)); err == nil {
		t.Fatal("an archive of version 3 claiming version 1 was imported")
	}
	requireRows(t, db, "SELECT count(*) FROM "+current.notes(h), 0)

	// Steps 1 and 3 only: the archive's version 2 is none of them.
	gap := notesSteps(3)
	delete(gap, "0002_words.sql")
	two := newNotesApp(t, 2, notesSteps(2))
	provision(t, two.c, e)
	holed := newNotesApp(t, 3, gap)
	f := tenancytest.FreshTenant(t)
	provision(t, holed.c, f)
	exec(t, db, "DELETE FROM "+holed.notes(f))
	refusedWith(t, holed.tenants, f, exportOf(t, two.tenants, e), tenancy.CodeArchiveMismatch, "version 2, which the module's migrations do not have")

	// Migrations on a shared table (a tagged route): run once for every
	// tenant, they cannot take an older tenant's rows.
	run := unique()
	schema := "tw" + run + "_shared"
	exec(t, db, "CREATE SCHEMA "+schema)
	sharedApp := func(n int) *modules.Tenants {
		var tn *modules.Tenants
		steps := fstest.MapFS{"0001_t.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS t" + run + " (x int);")}}
		if n > 1 {
			steps["0002_u.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE t" + run + " ADD COLUMN IF NOT EXISTS y int;")}
		}
		app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.StaticSchema(schema), modules.Migrations(steps),
			postgres.Document[item]("tagged", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("sdocs_" + run)})),
			modules.Lifecycle(), fx.Populate(&tn))
		startApp(t, app)
		provision(t, c, a)
		return tn
	}
	v1 := exportOf(t, sharedApp(1), a)
	g := tenancytest.FreshTenant(t)
	v2 := sharedApp(2)
	if _, err := v2.Provision(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	refusedWith(t, v2, g, v1, tenancy.CodeArchiveMismatch, "do not run in each tenant's own containers")
}

// refusedWith: the import is refused with code, naming the module and
// detail, and writes nothing.
func refusedWith(t *testing.T, tn *modules.Tenants, target tenancy.ID, archive []byte, code tenancy.Code, detail string) {
	t.Helper()
	tenancytest.CheckArchiveRefused(t, tn, target, archive, code)
	_ = tenancytest.RequireCode(t, tn.Import(context.Background(), target, bytes.NewReader(archive)), code, "postgres", "pg", "", detail)
}

func requireRows(t *testing.T, db *pgx.Conn, q string, want int64, args ...any) {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil || n != want {
		t.Errorf("%s: %d %v, want %d", q, n, err, want)
	}
}
