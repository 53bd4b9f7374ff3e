package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
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
	app, c := build(t, postgres.Module("pg", postgres.Connect(url), postgres.SchemaPrefix("tw"+run+"_"), postgres.AllowTeardown(),
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
	tenancytest.CheckArchiveRefused(t, src.tenants, c, tenancytest.Altered(archive, `"n":1`, `"n":2`), tenancy.CodeArchiveMismatch)
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
