package tenancytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// RoundTrip is what CheckRoundTrip checks: A's data exported and
// imported into C (provisioned, empty), with B's data left alone. Read,
// when set, is the test's own read of what A wrote, run under A and then
// under C: both must return the same.
type RoundTrip struct {
	Tenants *modules.Tenants
	// Into, when set, is the app C is imported into (another database or
	// server); Tenants otherwise.
	Into    *modules.Tenants
	A, B, C tenancy.ID
	Read    func(ctx context.Context) (any, error)
}

// CheckRoundTrip exports A (which must hold at least one record),
// imports the archive into C, and checks that C's own export holds the
// same sections (counts and sha256) as A's, that no record of C's names
// A's id, that Read under C returns what it returns under A, and that A's
// and B's exports are the same before and after. It returns A's archive.
func CheckRoundTrip(t testing.TB, rt RoundTrip) []byte {
	t.Helper()
	ctx := context.Background()
	into := rt.Into
	if into == nil {
		into = rt.Tenants
	}
	archiveA := export(t, rt.Tenants, rt.A)
	mA := manifest(t, archiveA)
	var n int64
	for _, s := range mA.Sections {
		n += s.Records
	}
	if n == 0 {
		t.Fatalf("round trip: A's archive holds no records; write A's data first:\n%s", archiveA)
	}
	beforeB := manifest(t, export(t, rt.Tenants, rt.B))
	if err := into.Import(ctx, rt.C, bytes.NewReader(archiveA)); err != nil {
		t.Fatalf("importing A's archive into C: %v", err)
	}
	archiveC := export(t, into, rt.C)
	mC := manifest(t, archiveC)
	if !sameSections(mA.Sections, mC.Sections) {
		t.Errorf("C's sections differ from A's:\nA %+v\nC %+v", mA.Sections, mC.Sections)
	}
	records := archiveC[bytes.IndexByte(archiveC, '\n')+1:]
	for _, id := range []string{rt.A.String(), rt.A.Hex()} {
		if bytes.Contains(records, []byte(id)) {
			t.Errorf("C's records name A's id %s:\n%s", id, records)
		}
	}
	if afterB := manifest(t, export(t, rt.Tenants, rt.B)); !sameSections(beforeB.Sections, afterB.Sections) {
		t.Errorf("B's data changed with the import into C:\nbefore %+v\nafter  %+v", beforeB.Sections, afterB.Sections)
	}
	if afterA := manifest(t, export(t, rt.Tenants, rt.A)); !sameSections(mA.Sections, afterA.Sections) {
		t.Errorf("A's data changed with the import into C:\nbefore %+v\nafter  %+v", mA.Sections, afterA.Sections)
	}
	if rt.Read != nil {
		a, errA := rt.Read(tenancy.WithTenant(ctx, rt.A))
		c, errC := rt.Read(tenancy.WithTenant(ctx, rt.C))
		ja, _ := json.Marshal(a)
		jc, _ := json.Marshal(c)
		if errA != nil || errC != nil || !bytes.Equal(ja, jc) {
			t.Errorf("reading A's data under C: %s (%v), under A: %s (%v)", jc, errC, ja, errA)
		}
	}
	return archiveA
}

// CheckArchiveRefused imports archive into target and requires the code,
// and target's export to hold the same sections afterwards as before:
// nothing written.
func CheckArchiveRefused(t testing.TB, tenants *modules.Tenants, target tenancy.ID, archive []byte, code tenancy.Code) {
	t.Helper()
	before := manifest(t, export(t, tenants, target))
	err := tenants.Import(context.Background(), target, bytes.NewReader(archive))
	var e *tenancy.Error
	if !errors.As(err, &e) || e.Code != code || e.Fix == "" {
		t.Fatalf("import: got %v, want %s with a fix", err, code)
	}
	if after := manifest(t, export(t, tenants, target)); !sameSections(before.Sections, after.Sections) {
		t.Errorf("a refused import wrote into %s:\nbefore %+v\nafter  %+v", target, before.Sections, after.Sections)
	}
}

func export(t testing.TB, tenants *modules.Tenants, id tenancy.ID) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tenants.Export(context.Background(), id, &b); err != nil {
		t.Fatalf("exporting %s: %v", id, err)
	}
	return b.Bytes()
}

// manifest checks an archive whole and returns its manifest.
func manifest(t testing.TB, archive []byte) migrate.Manifest {
	t.Helper()
	var spool bytes.Buffer
	_, m, err := migrate.ReadArchive(bytes.NewReader(archive), &spool)
	if err != nil {
		t.Fatalf("reading back an archive: %v\n%s", err, archive)
	}
	return m
}

func sameSections(a, b []migrate.ArchiveSection) bool {
	var x, y []migrate.ArchiveSection
	for _, s := range a {
		if s.Records > 0 {
			x = append(x, s)
		}
	}
	for _, s := range b {
		if s.Records > 0 {
			y = append(y, s)
		}
	}
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// Truncated and Altered are archive's damaged forms a test feeds
// CheckArchiveRefused: cut in the middle of its records, and with one
// record's value changed (the manifest left as it was).
func Truncated(archive []byte) []byte { return archive[:len(archive)/2] }

// Altered replaces the first old in archive's records with new.
func Altered(archive []byte, old, new string) []byte {
	head := bytes.IndexByte(archive, '\n') + 1
	return append(append([]byte{}, archive[:head]...), []byte(strings.Replace(string(archive[head:]), old, new, 1))...)
}

// Reseal rewrites archive's manifest to match its records, as someone
// who edited the records would: what is left to refuse an edited record
// is the backend's import, which binds the target tenant itself.
func Reseal(t testing.TB, archive []byte) []byte {
	t.Helper()
	lines := bytes.Split(bytes.TrimSuffix(archive, []byte("\n")), []byte("\n"))
	var h migrate.ArchiveHeader
	var m struct{ Manifest migrate.Manifest }
	if len(lines) < 2 || json.Unmarshal(lines[0], &h) != nil || json.Unmarshal(lines[len(lines)-1], &m) != nil {
		t.Fatalf("reseal: not an archive:\n%s", archive)
	}
	src, err := tenancy.ParseID(h.Tenant)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, err := migrate.NewArchiveWriter(&b, src, h.Created)
	if err != nil {
		t.Fatal(err)
	}
	recs := lines[1 : len(lines)-1]
	for _, am := range m.Manifest.Modules {
		w.Module(am)
		for len(recs) > 0 {
			var r migrate.Record
			if err := json.Unmarshal(recs[0], &r); err != nil {
				t.Fatalf("reseal: %v", err)
			}
			if r.Module != am.Module {
				break
			}
			if err := w.Emit(r); err != nil {
				t.Fatalf("reseal: %v", err)
			}
			recs = recs[1:]
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
