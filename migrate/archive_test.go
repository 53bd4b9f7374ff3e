package migrate_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func writeArchive(t *testing.T, recs ...migrate.Record) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := migrate.NewArchiveWriter(&b, tenancytest.TenantA, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	w.Module(migrate.ArchiveModule{Module: "m", Backend: "memory", Version: 3})
	w.Tier("r", tenancy.Tagged)
	for _, r := range recs {
		if err := w.Emit(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Skip("g", "tenant-global")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestArchiveReadsBackWhatItWrote: the manifest counts and hashes each
// section, and the records read back in order with the module's
// sections.
func TestArchiveReadsBackWhatItWrote(t *testing.T) {
	archive := writeArchive(t,
		migrate.Record{Route: "r", Family: "f", Kind: "row", Value: []byte(`{"a": 1}`)},
		migrate.Record{Route: "r", Family: "f", Kind: "row", Native: []byte{0, 0xff}},
		migrate.Record{Route: "s", Kind: "key", Key: "k", Meta: map[string]string{"x": "y"}})
	var spool bytes.Buffer
	h, m, err := migrate.ReadArchive(bytes.NewReader(archive), &spool)
	if err != nil {
		t.Fatal(err)
	}
	if h.Format != migrate.ArchiveFormat || h.Tenant != tenancytest.TenantA.String() || len(m.Sections) != 2 || m.Sections[0].Records != 2 ||
		m.Sections[0].Tier != "tagged" || m.Modules[0].Version != 3 || len(m.Skipped) != 1 {
		t.Fatalf("header %+v manifest %+v", h, m)
	}
	in := migrate.NewRecords(&spool, m).Module("m")
	if len(in.Sections()) != 2 {
		t.Fatalf("sections %+v", in.Sections())
	}
	var got []string
	for {
		r, ok, err := in.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, r.Route+"/"+string(r.Value)+"/"+string(r.Native)+"/"+r.Key)
	}
	if len(got) != 3 || got[0] != `r/{"a": 1}//` || got[1] != "r//\x00\xff/" || got[2] != "s///k" {
		t.Fatalf("records %q", got)
	}
}

// TestArchiveRefusesDamage: each damage is refused with its code.
func TestArchiveRefusesDamage(t *testing.T) {
	archive := string(writeArchive(t,
		migrate.Record{Route: "r", Kind: "row", Value: []byte(`{"a":1}`)},
		migrate.Record{Route: "s", Kind: "row", Value: []byte(`{"a":2}`)}))
	lines := strings.SplitAfter(archive, "\n")
	for name, c := range map[string]struct {
		archive string
		code    tenancy.Code
	}{
		"empty":               {"", tenancy.CodeArchiveInvalid},
		"no header":           {strings.Join(lines[1:], ""), tenancy.CodeArchiveInvalid},
		"other version":       {strings.Replace(archive, `"version":1`, `"version":2`, 1), tenancy.CodeArchiveInvalid},
		"cut":                 {strings.Join(lines[:3], ""), tenancy.CodeArchiveInvalid},
		"no last newline":     {strings.TrimSuffix(archive, "\n"), tenancy.CodeArchiveInvalid},
		"after the manifest":  {archive + lines[1], tenancy.CodeArchiveInvalid},
		"unknown field":       {strings.Replace(archive, `"kind":"row"`, `"kind":"row","tenant":"x"`, 1), tenancy.CodeArchiveInvalid},
		"not json":            {strings.Replace(archive, `{"a":1}`, `{"a":1`, 1), tenancy.CodeArchiveInvalid},
		"no route":            {strings.Replace(archive, `"route":"r",`, ``, 1), tenancy.CodeArchiveInvalid},
		"value altered":       {strings.Replace(archive, `{"a":1}`, `{"a":3}`, 1), tenancy.CodeArchiveMismatch},
		"record dropped":      {lines[0] + lines[2] + lines[3], tenancy.CodeArchiveMismatch},
		"records swapped":     {lines[0] + lines[2] + lines[1] + lines[3], tenancy.CodeArchiveMismatch},
		"section interleaved": {lines[0] + lines[1] + lines[2] + lines[1] + lines[3], tenancy.CodeArchiveInvalid},
	} {
		_, _, err := migrate.ReadArchive(strings.NewReader(c.archive), io.Discard)
		if tenancy.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
}
