package tenancytest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// ImportCut is what CheckImportCut checks: one module's import of
// Archive into Target, cut after each of the module's records in turn.
type ImportCut struct {
	Tenants *modules.Tenants
	// Import is the module's own import (its *migrate.Runner's, provided
	// as name:"<module>", or its TenantState's), which the check runs
	// with a record source that fails.
	Import  func(ctx context.Context, tenant tenancy.ID, in migrate.ArchiveIn) error
	Module  string
	Target  tenancy.ID
	Archive []byte
	// At is the cuts, each a count of records read before it (nil: after
	// every record). A backend that writes in pages is cut on both sides
	// of a page's end.
	At []int
}

// errCut is the record source failing, as a process killed mid-import
// stops reading.
var errCut = errors.New("tenancytest: the import was cut here")

// CheckImportCut cuts the module's import of the archive into the target
// after each of its records in turn (or at each of At), then recovers as docs/archive.md
// says: a target the cut import wrote into is offboarded and provisioned
// again, and the whole archive imported. The target must then hold
// exactly the archive's sections (each count and sha256: nothing lost,
// nothing twice). Between rounds the target is offboarded and
// provisioned again. Target must be provisioned and empty, and every
// module of the app must allow teardown. It returns how many cuts left
// records behind (0 for a backend that imports in one transaction).
func CheckImportCut(t testing.TB, c ImportCut) (leftBehind int) {
	t.Helper()
	ctx := context.Background()
	want := manifest(t, c.Archive)
	var spool bytes.Buffer
	if _, _, err := migrate.ReadArchive(bytes.NewReader(c.Archive), &spool); err != nil {
		t.Fatal(err)
	}
	in := migrate.NewRecords(&spool, want).Module(c.Module)
	var recs []migrate.Record
	for r, err := range migrate.RecordsOf(in) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if len(recs) < 2 {
		t.Fatalf("import cut: module %s holds %d records of the archive; give it at least 2", c.Module, len(recs))
	}
	empty := manifest(t, export(t, c.Tenants, c.Target))
	afresh := func(why string) {
		t.Helper()
		if rep, err := c.Tenants.Offboard(ctx, c.Target); err != nil {
			t.Fatalf("%s: offboarding the target: %v (%+v)", why, err, rep)
		}
		if _, err := c.Tenants.Provision(ctx, c.Target); err != nil {
			t.Fatalf("%s: provisioning the target again: %v", why, err)
		}
	}
	at := c.At
	if at == nil {
		for n := range len(recs) {
			at = append(at, n)
		}
	}
	for _, n := range at {
		if n < 0 || n >= len(recs) {
			t.Fatalf("import cut: a cut after %d of the module's %d records", n, len(recs))
		}
		cut := &cutRecords{recs: recs, n: n, sections: in.Sections(), version: in.Version()}
		if err := c.Import(ctx, c.Target, cut); !errors.Is(err, errCut) {
			t.Fatalf("an import cut after %d of %d records: %v, want the cut's error", n, len(recs), err)
		}
		if got := manifest(t, export(t, c.Tenants, c.Target)); !sameSections(got.Sections, empty.Sections) {
			leftBehind++
			// As documented: a rerun into a target holding part of the
			// archive is refused, writing nothing; start it afresh.
			err := c.Tenants.Import(ctx, c.Target, bytes.NewReader(c.Archive))
			if tenancy.CodeOf(err) != tenancy.CodeArchiveTargetNotEmpty {
				t.Fatalf("a rerun after a cut after %d records that left some: %v, want %s", n, err, tenancy.CodeArchiveTargetNotEmpty)
			}
			afresh("after the cut")
		}
		if err := c.Tenants.Import(ctx, c.Target, bytes.NewReader(c.Archive)); err != nil {
			t.Fatalf("the rerun after a cut after %d records: %v", n, err)
		}
		if got := manifest(t, export(t, c.Tenants, c.Target)); !sameSections(got.Sections, want.Sections) {
			t.Fatalf("after a cut after %d records and the rerun the target holds:\n%+v\nwant:\n%+v", n, got.Sections, want.Sections)
		}
		afresh("between rounds")
	}
	return leftBehind
}

// cutRecords is a module's records that fail after n of them.
type cutRecords struct {
	recs     []migrate.Record
	n        int
	sections []migrate.ArchiveSection
	version  int64
}

func (c *cutRecords) Next() (migrate.Record, bool, error) {
	if c.n == 0 {
		return migrate.Record{}, false, errCut
	}
	c.n--
	r := c.recs[0]
	c.recs = c.recs[1:]
	return r, true, nil
}

func (c *cutRecords) Sections() []migrate.ArchiveSection { return c.sections }
func (c *cutRecords) Version() int64                     { return c.version }
