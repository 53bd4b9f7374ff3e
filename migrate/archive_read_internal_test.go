package migrate

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TestPlainRecordAsDecoder: every line the reader's fast path takes
// decodes, strictly, to the same record; the lines it must not take
// (escapes, other field orders, null or padded values, an unknown field,
// anything after the value) it leaves to the decoder.
func TestPlainRecordAsDecoder(t *testing.T) {
	var b bytes.Buffer
	w, err := NewArchiveWriter(&b, tenancy.MustParseID("00000000-0000-0000-0000-000000000001"), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	w.Module(ArchiveModule{Module: "m"})
	for _, r := range []Record{
		{Route: "r", Family: "f", Kind: "row", Value: []byte(`{"a": [1, "x\"y\\z\u00e9"], "b": null}`)},
		{Route: "r", Family: "g", Kind: "row", Value: []byte(`"s"`)},
		{Route: "r", Kind: "key", Key: "k:1", Value: []byte(`12`)},
		{Route: "r", Kind: "key", Key: "k<é>", Value: []byte(`true`)},
		{Route: "r é", Family: "f", Kind: "row", Value: []byte(`{}`)},
		{Route: "r", Family: "h", Kind: "key", Native: []byte{1, 2}},
		{Route: "r", Family: "i", Kind: "key", Value: []byte(`1`), Meta: map[string]string{"x": "y"}},
		{Route: "r", Family: "j", Kind: "document", Value: []byte(`{"a":1}`), Meta: map[string]string{"id": "tenant"}},
	} {
		if err := w.Emit(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	lines = lines[1 : len(lines)-1]
	took := 0
	for _, l := range append(lines,
		`{"module":"m","route":"r","kind":"row","value":null}`,
		`{"module":"m","route":"r","kind":"row","value":{} }`,
		`{"module":"m","route":"r","kind":"row","value": {}}`,
		`{"module":"m","route":"r","kind":"row","value":{}}}`,
		`{"module":"m","route":"r","kind":"row","value":{},"x":1}`,
		`{"module":"m","route":"r","kind":"row","value":1,"route":"s"}`,
		`{"module":"m","route":"r\u0041","kind":"row","value":1}`,
		`{"module":"m","route":"r","kind":"row","value":{"a":1`,
		`{"module":"m","route":"r","kind":"row","key":"","value":[1,2]}`,
		`{"module":"m","route":"r","family":"","kind":"row","value":[1,2]}`,
		`{"module":"m","route":"r","kind":"row","value":"a","value":"b"}`,
	) {
		got, ok := plainRecord([]byte(l), &Record{Module: "m", Route: "r", Family: "g", Kind: "key"})
		if !ok {
			continue
		}
		took++
		var want archiveLine
		if err := strict([]byte(l), &want); err != nil {
			t.Errorf("%s: taken, but the decoder refuses it: %v", l, err)
			continue
		}
		if want.Manifest != nil || want.ArchiveHeader != (ArchiveHeader{}) || !reflect.DeepEqual(got, want.Record) {
			t.Errorf("%s: taken as %+v, the decoder reads %+v", l, got, want)
		}
	}
	if took != 5 {
		t.Errorf("the fast path took %d lines, want 5 (the writer's 3 plain ones, and the key and the family given empty)", took)
	}
}

// TestSpoolReadBack: the records read back from the checked spool are
// those written, a value followed by meta included.
func TestSpoolReadBack(t *testing.T) {
	recs := []Record{
		{Module: "m", Route: "r", Family: "f", Kind: "row", Value: []byte(`{"a":1}`)},
		{Module: "m", Route: "r", Family: "f", Kind: "row", Value: []byte(`{"a":2}`)},
		{Module: "m", Route: "r", Family: "j", Kind: "document", Value: []byte(`{"a":3}`), Meta: map[string]string{"id": "tenant"}},
		{Module: "m", Route: "r", Family: "k", Kind: "key", Key: "x", Native: []byte{0, 1}, Meta: map[string]string{"expires_ms": "5"}},
	}
	var b bytes.Buffer
	w, err := NewArchiveWriter(&b, tenancy.MustParseID("00000000-0000-0000-0000-000000000001"), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	w.Module(ArchiveModule{Module: "m"})
	for _, r := range recs {
		if err := w.Emit(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var spool bytes.Buffer
	_, m, err := ReadArchive(&b, &spool)
	if err != nil {
		t.Fatal(err)
	}
	in := NewRecords(&spool, m).Module("m")
	for i, want := range recs {
		got, ok, err := in.Next()
		if err != nil || !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("record %d: %+v %v %v, want %+v", i, got, ok, err, want)
		}
	}
}
