package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestArchiveExportValuesAsRowToJSON: the export's records, built in the
// client from COPY text, are byte for byte what row_to_json gives on the
// server for the same rows (the archives written before, and their
// hashes, hold), for every column type a route or a migration uses,
// NULLs and the characters JSON or COPY escape included.
func TestArchiveExportValuesAsRowToJSON(t *testing.T) {
	run := unique()
	prefix := "tw" + run + "_"
	steps := fstest.MapFS{"0001_all.sql": {Data: []byte(`CREATE TYPE mood AS ENUM ('ok', 'not "ok"');
CREATE DOMAIN short AS text CHECK (length(VALUE) < 100);
CREATE TABLE every ("id" bigserial PRIMARY KEY, "t" text, "v" varchar(20), "c" char(3), "i2" smallint, "i4" int, "i8" bigint,
	"b" boolean, "j" json, "jb" jsonb, "u" uuid, "y" bytea, "ts" timestamptz, "tsl" timestamp, "d" date, "n" numeric, "f" float8, "f4" real,
	"arr" text[], "ia" int[], "m" mood, "s" short, "iv" interval, "odd ""name""	tab" text, "g" text GENERATED ALWAYS AS (upper(t)) STORED);
CREATE TABLE plain ("id" int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "t" text, "v" varchar(20), "c" char(3), "i2" smallint, "i8" bigint,
	"b" boolean, "jb" jsonb, "u" uuid, "y" bytea, "ts" timestamptz, "tsl" timestamp, "d" date, "n" numeric, "f" float8, "f4" real, "odd ""name""	tab" text);`)}}
	var tenants *modules.Tenants
	var d, o *postgres.Documents[item]
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix), modules.Migrations(steps), modules.AllowTeardown(),
		postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}),
		postgres.Document[item]("tagged", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("acopy_" + run)})),
		modules.Lifecycle(), named("tagged", &d), named("orders", &o), fx.Populate(&tenants))
	startApp(t, app)
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, c, a, b)
	db := superuser(t)
	every := pgx.Identifier{postgres.SchemaName(prefix, a), "every"}.Sanitize()
	odd := "a\"b\\c\td\ne\rf\bg\fh\x01i\x1fj\x7fk<>&é\u2028𝄞 \\N \\t"
	exec(t, db, `INSERT INTO `+every+` (t, v, c, i2, i4, i8, b, j, jb, u, y, ts, tsl, d, n, f, f4, arr, ia, m, s, iv, "odd ""name""	tab") VALUES
		($1, 'v', 'ab', -32768, 2147483647, -9223372036854775808, true, $2, $3, '00000000-0000-0000-0000-0000000000ff', $4, '2026-01-02 03:04:05.123456+05:30', '2026-01-02 03:04:05', '2026-01-02',
		 '1.50', 'NaN', '-Infinity', ARRAY['a', NULL, 'b"c', ''], '{1,2}', 'not "ok"', 'short', '1 day 2 hours', $1),
		('', '', '', 0, 0, 0, false, '{}', '{}', gen_random_uuid(), '', 'infinity', '-infinity', '-infinity', '-0.000', '1e300', '0.1', '{}', '{}', 'ok', '', '0', ''),
		(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
		odd, "{\"a\" :\n [1,\t\"x\\u0000\\ny\"], \"a\": 2}", `{"k": "q\"\\\n\u0001é", "n": 1.0e2, "z": [null, true, {}]}`, []byte{0, 0xff, '\\', '\n'})
	exec(t, db, "INSERT INTO "+pgx.Identifier{postgres.SchemaName(prefix, a), "plain"}.Sanitize()+` (t, v, c, i2, i8, b, jb, u, y, ts, tsl, d, n, f, f4, "odd ""name""	tab")
		SELECT t, v, c, i2, i8, b, jb, u, y, ts, tsl, d, n, f, f4, "odd ""name""	tab" FROM `+every+" ORDER BY id")
	ctx := tenancy.WithTenant(context.Background(), a)
	if _, err := d.Create(ctx, "k\t\\1", item{Name: odd, N: -7}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Create(ctx, "o", item{Name: "\u0007?", N: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(tenancy.WithTenant(context.Background(), b), "b's", item{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	export, server, err := postgres.ArchiveValuesBothWays(context.Background(), c, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(server) != 8 {
		t.Fatalf("%d rows from row_to_json, want 8 (1 of docs, 3 of each of the migration's tables, 1 tagged):\n%s", len(server), strings.Join(server, "\n"))
	}
	if strings.Join(export, "\n") != strings.Join(server, "\n") {
		for i := range max(len(export), len(server)) {
			var e, s string
			if i < len(export) {
				e = export[i]
			}
			if i < len(server) {
				s = server[i]
			}
			if e != s {
				t.Errorf("row %d:\nexport %s\nserver %s", i, e, s)
			}
		}
	}
}

// TestArchiveImportCopyAsInserts: an archive of every column type
// imported with COPY FROM (the tables whose types it takes) and with the
// jsonb_populate_recordset INSERTs gives the same rows, the source's (a
// json column's text as jsonb spells it: both go through jsonb), and
// an edited row COPY cannot take as the INSERTs did is refused.
func TestArchiveImportCopyAsInserts(t *testing.T) {
	run := unique()
	prefix := "tw" + run + "_"
	var tenants *modules.Tenants
	var d *postgres.Documents[item]
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix), modules.Migrations(fstest.MapFS{"0001_plain.sql": {Data: []byte(
		`CREATE TABLE plain ("id" int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "t" text, "c" char(3), "i2" smallint, "b" boolean, "jb" jsonb, "u" uuid, "y" bytea,
			"ts" timestamptz, "tsl" timestamp, "d" date, "n" numeric, "f" float8, "odd ""name""	tab" text);
		 CREATE TABLE arrays ("id" bigserial PRIMARY KEY, "a" text[], "j" json);`)}}), modules.AllowTeardown(),
		postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}),
		postgres.Document[item]("tagged", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("acopyin_" + run)})),
		modules.Lifecycle(), named("tagged", &d), fx.Populate(&tenants))
	startApp(t, app)
	a, byCopy, byInsert, edited := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	provision(t, c, a, byCopy, byInsert, edited)
	db := superuser(t)
	odd := "a\"b\\c\td\ne\rf\bg\fh\x01i\x1fj\x7fk<>&é\u2028𝄞 \\N \\t"
	exec(t, db, "INSERT INTO "+pgx.Identifier{postgres.SchemaName(prefix, a), "plain"}.Sanitize()+` (t, c, i2, b, jb, u, y, ts, tsl, d, n, f, "odd ""name""	tab") VALUES
		($1, 'ab', -32768, true, $2, '00000000-0000-0000-0000-0000000000ff', $3, '2026-01-02 03:04:05.123456+05:30', '2026-01-02 03:04:05', '2026-01-02', '1.50', 'NaN', $1),
		('', '', 0, false, '"s"', gen_random_uuid(), '', 'infinity', '-infinity', '-infinity', '-0.000', '1e300', ''),
		(NULL, NULL, NULL, NULL, 'null', NULL, NULL, NULL, NULL, NULL, NULL, '-Infinity', NULL)`,
		odd, `{"k": "q\"\\\n\u0001é\ud834\udd1e", "n": 1.0e2, "z": [null, true, {}]}`, []byte{0, 0xff, '\\', '\n'})
	exec(t, db, "INSERT INTO "+pgx.Identifier{postgres.SchemaName(prefix, a), "arrays"}.Sanitize()+` (a, j) VALUES (ARRAY['x', NULL, 'y"z'], '{"a": 2, "b": 1}')`)
	if _, err := d.Create(tenancy.WithTenant(context.Background(), a), "k\t\\1", item{Name: odd, N: -7}); err != nil {
		t.Fatal(err)
	}
	archive := exportOf(t, tenants, a)
	if err := tenants.Import(context.Background(), byCopy, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	restore := postgres.ImportWithInserts()
	err := tenants.Import(context.Background(), byInsert, bytes.NewReader(archive))
	restore()
	if err != nil {
		t.Fatal(err)
	}
	want := records(archive)
	if !bytes.Contains(want, []byte(`"family":"plain"`)) || !bytes.Contains(want, []byte(`"family":"arrays"`)) {
		t.Fatalf("the archive has no rows of the tables:\n%s", want)
	}
	for _, id := range []tenancy.ID{byCopy, byInsert} {
		if got := records(exportOf(t, tenants, id)); !bytes.Equal(got, want) {
			t.Errorf("imported as %s:\n%s\nwant:\n%s", id, got, want)
		}
	}
	// A text column given an object, resealed: the INSERTs stored its
	// JSON as text; COPY refuses it, and nothing is written.
	bad := tenancytest.Reseal(t, tenancytest.Altered(archive, `"c":"   "`, `"c":{"x":1}`))
	tenancytest.CheckArchiveRefused(t, tenants, edited, bad, tenancy.CodeArchiveMismatch)
}
