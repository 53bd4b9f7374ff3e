package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// archiveApp is one app of the archive tests on the server at url: a
// namespace document route (the tenant's schema) and a tagged one.
type archiveApp struct {
	tenants *modules.Tenants
	c       *postgres.Client
	ns, tag *postgres.Documents[item]
}

func newArchiveApp(t *testing.T, url, run string) archiveApp {
	t.Helper()
	var a archiveApp
	app, c := build(t, postgres.Module("pg", postgres.Connect(url), postgres.SchemaPrefix("tw"+run+"_"), modules.AllowTeardown(),
		postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}),
		postgres.Document[item]("tagged", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("adocs_" + run)})),
		modules.Lifecycle(), named("orders", &a.ns), named("tagged", &a.tag), fx.Populate(&a.tenants))
	startApp(t, app)
	a.c = c
	return a
}

// dropRun drops what the run made on the server at url (TestMain cleans
// the first server only).
func dropRun(t *testing.T, url, run string) {
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		rows, _ := conn.Query(ctx, `SELECT format('DROP TABLE IF EXISTS %I.%I CASCADE', schemaname, tablename) FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE $1
			UNION ALL SELECT format('DROP SCHEMA IF EXISTS %I CASCADE', nspname) FROM pg_namespace WHERE nspname LIKE $1`, "%"+run+"%")
		stmts, _ := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, s := range stmts {
			_, _ = conn.Exec(ctx, s)
		}
	})
}

func writeArchiveData(t *testing.T, a archiveApp, id tenancy.ID, names ...string) {
	t.Helper()
	ctx := tenancy.WithTenant(context.Background(), id)
	for i, n := range names {
		for _, r := range []*postgres.Documents[item]{a.ns, a.tag} {
			if _, err := r.Create(ctx, n, item{Name: n + " of " + id.Hex()[:4], N: i}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestArchiveRoundTripAcrossServers: tenant A's rows of its schema and of
// the tagged table, exported from the first server, imported as C into
// an app on the second: C reads what A had, its export holds the same
// sections, no row names A, and B is untouched.
func TestArchiveRoundTripAcrossServers(t *testing.T) {
	run := unique()
	second := testsvc.PostgresSecondURL(t)
	dropRun(t, second, run)
	src, dst := newArchiveApp(t, testsvc.PostgresURL(t), run), newArchiveApp(t, second, run)
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, src.c, a, b)
	provision(t, dst.c, c)
	writeArchiveData(t, src, a, "x", "y")
	writeArchiveData(t, src, b, "x")
	archive := tenancytest.CheckRoundTrip(t, tenancytest.RoundTrip{Tenants: src.tenants, Into: dst.tenants, A: a, B: b, C: c,
		Read: func(ctx context.Context) (any, error) {
			r := dst
			if id, _ := tenancy.FromContext(ctx); id == a {
				r = src
			}
			x, err := r.ns.Get(ctx, "y")
			if err != nil {
				return nil, err
			}
			y, err := r.tag.Get(ctx, "x")
			return []any{x.Value, x.Version, y.Value, y.Version}, err
		}})
	for _, want := range []string{`"snapshot":"one REPEATABLE READ READ ONLY transaction`, `"route":"orders","family":"docs"`, `"route":"tagged","family":"adocs_` + run + `"`, `"tier":"namespace"`, `"tier":"tagged"`} {
		if !bytes.Contains(archive, []byte(want)) {
			t.Errorf("the archive does not hold %s:\n%s", want, archive)
		}
	}
}

// TestArchiveRefusedPostgres: a truncated archive, an altered one, one
// into a tenant holding rows, and one edited (manifest resealed) to name
// a table the route does not have are refused with nothing written; an
// edit that puts B's id in a row's tenant column lands in the target
// only.
func TestArchiveRefusedPostgres(t *testing.T) {
	run := unique()
	src := newArchiveApp(t, testsvc.PostgresURL(t), run)
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, src.c, a, b, c)
	writeArchiveData(t, src, a, "x", "y")
	writeArchiveData(t, src, b, "x")
	var buf bytes.Buffer
	if err := src.tenants.Export(context.Background(), a, &buf); err != nil {
		t.Fatal(err)
	}
	archive := buf.Bytes()
	tenancytest.CheckArchiveRefused(t, src.tenants, c, tenancytest.Truncated(archive), tenancy.CodeArchiveInvalid)
	tenancytest.CheckArchiveRefused(t, src.tenants, c, tenancytest.Altered(archive, `y of`, `z of`), tenancy.CodeArchiveMismatch)
	tenancytest.CheckArchiveRefused(t, src.tenants, b, archive, tenancy.CodeArchiveTargetNotEmpty)
	// B's schema's table named as the family: refused (the import
	// resolves every table for the target tenant itself).
	bSchema := postgres.SchemaName("tw"+run+"_", b)
	edited := tenancytest.Reseal(t, tenancytest.Altered(archive, `"family":"docs"`, `"family":"`+bSchema+`.docs"`))
	tenancytest.CheckArchiveRefused(t, src.tenants, c, edited, tenancy.CodeArchiveMismatch)
	// A tenant column naming B, resealed: ignored, the row is C's.
	edited = tenancytest.Reseal(t, tenancytest.Altered(archive, `{"id":`, `{"tenant_id":"`+b.String()+`","id":`))
	if !strings.Contains(string(edited), b.String()) {
		t.Fatal("the edit did not take")
	}
	beforeB := exportOf(t, src.tenants, b)
	if err := src.tenants.Import(context.Background(), c, bytes.NewReader(edited)); err != nil {
		t.Fatal(err)
	}
	if after := exportOf(t, src.tenants, b); !bytes.Equal(records(beforeB), records(after)) {
		t.Errorf("B's rows changed:\n%s\n%s", beforeB, after)
	}
	if n, err := src.tag.Count(tenancy.WithTenant(context.Background(), c), document.Query{}); err != nil || n != 2 {
		t.Errorf("C's tagged rows: %d %v, want 2", n, err)
	}
}

func exportOf(t *testing.T, tn *modules.Tenants, id tenancy.ID) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tn.Export(context.Background(), id, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// records is an archive without its header and manifest (whose times
// differ).
func records(archive []byte) []byte {
	lines := bytes.Split(archive, []byte("\n"))
	return bytes.Join(lines[1:len(lines)-2], []byte("\n"))
}

// TestArchiveMigratedTableAndOutbox: a table a migration made in the
// tenant's schema (a bigserial key, bytea, timestamptz) comes back with
// its values and its sequence moved past them; the tenant's outbox rows
// of the shared table come back under C with new ids (A's are still
// A's); an app at another migration version refuses the archive.
func TestArchiveMigratedTableAndOutbox(t *testing.T) {
	run := unique()
	prefix := "tw" + run + "_"
	steps := fstest.MapFS{"0001_audit.sql": {Data: []byte("CREATE TABLE audit (id bigserial PRIMARY KEY, note text, data bytea, at timestamptz);")}}
	var o *postgres.Outbox
	var tenants *modules.Tenants
	// The shared outbox gives the module a shared migration target: a
	// static schema of this run, so the migration never lands in public.
	exec(t, superuser(t), "CREATE SCHEMA "+pgx.Identifier{prefix + "shared"}.Sanitize())
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix), postgres.StaticSchema(prefix+"shared"), modules.Migrations(steps),
		postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}),
		postgres.OutboxRoute("out", postgres.OutboxConfig{TenantAware: true, Table: naming.Shared("aout_" + run)})),
		modules.Lifecycle(), named("out", &o), fx.Populate(&tenants))
	startApp(t, app)
	a, b, cc := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, c, a, b, cc)
	db := superuser(t)
	ctx := context.Background()
	audit := func(id tenancy.ID) string { return pgx.Identifier{postgres.SchemaName(prefix, id), "audit"}.Sanitize() }
	if _, err := db.Exec(ctx, "INSERT INTO "+audit(a)+" (note, data, at) VALUES ('one', '\\x00ff', '2026-01-02T03:04:05.123456Z'), ('two', NULL, NULL), ('three', '', now())"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []tenancy.ID{b, a, a} {
		if err := o.Write(tenancy.WithTenant(ctx, id), outbox.Message{EventID: "e-" + unique(), Topic: "t", Payload: []byte{0, 1}}); err != nil {
			t.Fatal(err)
		}
	}
	archive := exportOf(t, tenants, a)
	if err := tenants.Import(ctx, cc, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	rowsOf := func(q string, args ...any) string {
		t.Helper()
		var s string
		if err := db.QueryRow(ctx, "SELECT coalesce(jsonb_agg(x ORDER BY x)::text, '') FROM ("+q+") x", args...).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if ra, rc := rowsOf("SELECT * FROM "+audit(a)), rowsOf("SELECT * FROM "+audit(cc)); ra != rc || !strings.Contains(ra, `\\x00ff`) {
		t.Errorf("audit rows: A %s, C %s", ra, rc)
	}
	var next int64
	if err := db.QueryRow(ctx, "INSERT INTO "+audit(cc)+" (note) VALUES ('four') RETURNING id").Scan(&next); err != nil || next != 4 {
		t.Errorf("C's next audit id: %d %v, want 4 (the sequence moved past the imported rows)", next, err)
	}
	out := pgx.Identifier{prefix + "shared", "aout_" + run}.Sanitize()
	q := "SELECT event_id, topic, payload FROM " + out + " WHERE tenant_id = $1"
	if ra, rc := rowsOf(q, a), rowsOf(q, cc); ra != rc || strings.Count(ra, "e-") != 2 {
		t.Errorf("outbox rows: A %s, C %s", ra, rc)
	}
	var shared int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM "+out+" x JOIN "+out+" y ON x.id = y.id AND x.tenant_id <> y.tenant_id").Scan(&shared); err != nil || shared != 0 {
		t.Errorf("rows of two tenants share an id: %d %v", shared, err)
	}
	// A newer migration version: refused before anything is written.
	var other *modules.Tenants
	app2, c2 := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+unique()+"_"),
		postgres.OutboxRoute("out", postgres.OutboxConfig{TenantAware: true, Table: naming.Shared("aout2_" + run)})),
		modules.Lifecycle(), fx.Populate(&other))
	startApp(t, app2)
	d := tenancytest.FreshTenant(t)
	provision(t, c2, d)
	err := other.Import(ctx, d, bytes.NewReader(archive))
	_ = tenancytest.RequireCode(t, err, tenancy.CodeArchiveVersionAhead, "postgres", "pg", "", "migration version 1, newer than the app's 0")
}

// failingIn is an archive's records that fail after n of them: an import
// interrupted there (a crash, a lost connection).
type failingIn struct {
	recs    []migrate.Record
	n       int
	version int64 // the archive's migration version
}

func (f *failingIn) Next() (migrate.Record, bool, error) {
	if f.n == 0 {
		return migrate.Record{}, false, errors.New("interrupted")
	}
	if len(f.recs) == 0 {
		return migrate.Record{}, false, nil
	}
	f.n--
	r := f.recs[0]
	f.recs = f.recs[1:]
	return r, true, nil
}

func (f *failingIn) Sections() []migrate.ArchiveSection { return nil }

func (f *failingIn) Version() int64 { return f.version }

// TestArchiveImportInterruptedAtEveryRecord: an import into C that fails
// after each of the archive's records in turn leaves C empty (one
// transaction), and a rerun then imports the whole archive.
func TestArchiveImportInterruptedAtEveryRecord(t *testing.T) {
	run := unique()
	src := newArchiveApp(t, testsvc.PostgresURL(t), run)
	a, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, src.c, a, c)
	writeArchiveData(t, src, a, "x", "y", "z")
	archive := exportOf(t, src.tenants, a)
	var spool bytes.Buffer
	_, m, err := migrate.ReadArchive(bytes.NewReader(archive), &spool)
	if err != nil {
		t.Fatal(err)
	}
	var recs []migrate.Record
	in := migrate.NewRecords(&spool, m).Module("pg")
	for {
		r, ok, err := in.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		recs = append(recs, r)
	}
	if len(recs) != 6 {
		t.Fatalf("%d records", len(recs))
	}
	empty := records(exportOf(t, src.tenants, c))
	for n := range len(recs) {
		if err := src.c.Import(context.Background(), c, &failingIn{recs: recs, n: n}); err == nil {
			t.Fatalf("an import interrupted after %d records succeeded", n)
		}
		if got := records(exportOf(t, src.tenants, c)); !bytes.Equal(got, empty) {
			t.Fatalf("an import interrupted after %d records left:\n%s", n, got)
		}
	}
	if err := src.tenants.Import(context.Background(), c, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	if got, want := records(exportOf(t, src.tenants, c)), records(archive); !bytes.Equal(got, want) {
		t.Errorf("the rerun imported:\n%s\nwant:\n%s", got, want)
	}
}

// TestArchiveIntoUnprovisionedTenant: a target whose schema was never
// made is refused with archive_mismatch naming provisioning, and nothing
// is written to the tagged table.
func TestArchiveIntoUnprovisionedTenant(t *testing.T) {
	run := unique()
	src := newArchiveApp(t, testsvc.PostgresURL(t), run)
	a, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, src.c, a)
	writeArchiveData(t, src, a, "x")
	err := src.tenants.Import(context.Background(), c, bytes.NewReader(exportOf(t, src.tenants, a)))
	e := tenancytest.RequireCode(t, err, tenancy.CodeArchiveMismatch, "postgres", "pg", "orders")
	if !strings.Contains(e.Fix, "provision") {
		t.Errorf("fix %q does not say to provision", e.Fix)
	}
	provision(t, src.c, c)
	if n, err := src.tag.Count(tenancy.WithTenant(context.Background(), c), document.Query{}); err != nil || n != 0 {
		t.Errorf("C's tagged rows after the refused import: %d %v", n, err)
	}
}
