package mongo

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/tenancy"
)

var tenantA = tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")

func TestTenantPredicateComesFirst(t *testing.T) {
	tg := target{tag: tenantA}
	f := tg.filter(queryFilter(document.Query{Filters: []document.Filter{{Field: "n", Op: document.Gt, Value: 3}}})...)
	if len(f) != 2 || f[0].Key != fieldTenant || f[0].Value != tenantA.String() {
		t.Fatalf("filter %v: tenant predicate not first", f)
	}
	if f[1].Key != "doc.n" {
		t.Fatalf("filter %v", f)
	}
	cond := f[1].Value.(bson.D)
	if cond[0].Key != "$gt" || cond[0].Value != int64(3) {
		t.Fatalf("condition %v", cond)
	}
	id := tg.byID("x")
	if id[0].Key != fieldTenant || id[1].Value != tenantA.Hex()+":x" {
		t.Fatalf("byID %v", id)
	}
	st := tg.stamp("x")
	if st[0].Value != tenantA.Hex()+":x" || st[1].Key != fieldTenant {
		t.Fatalf("stamp %v", st)
	}
	untagged := target{}
	if len(untagged.filter()) != 0 || untagged.byID("x")[0].Value != "x" {
		t.Fatal("an untagged target carries a tenant")
	}
}

func TestNeRequiresField(t *testing.T) {
	f := queryFilter(document.Query{Filters: []document.Filter{{Field: "s", Op: document.Ne, Value: "a"}}})
	if c := f[0].Value.(bson.D); len(c) != 2 || c[1].Key != "$exists" {
		t.Fatalf("ne condition %v", c)
	}
}

func TestSortThenID(t *testing.T) {
	s := querySort(document.Query{OrderBy: "n", Desc: true})
	if len(s) != 2 || s[0].Key != "doc.n" || s[0].Value != -1 || s[1].Key != fieldID || s[1].Value != -1 {
		t.Fatalf("sort %v", s)
	}
}

func TestCodecRoundTrip(t *testing.T) {
	type v struct {
		S string         `json:"s"`
		N int            `json:"n"`
		F float64        `json:"f"`
		B []byte         `json:"b"`
		M map[string]int `json:"m"`
		L []string       `json:"l"`
	}
	in := v{S: "x", N: 1 << 40, F: 2.5, B: []byte{1, 2}, M: map[string]int{"a": 1}, L: []string{"p"}}
	enc, err := encodeValue(in)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bson.Marshal(bson.D{{Key: "d", Value: enc}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeValue[v](bson.Raw(raw).Lookup("d"))
	if err != nil {
		t.Fatal(err)
	}
	if out.S != in.S || out.N != in.N || out.F != in.F || string(out.B) != string(in.B) || out.M["a"] != 1 || out.L[0] != "p" {
		t.Fatalf("round trip: %+v", out)
	}
	if s, err := encodeValue("plain"); err != nil || s != "plain" {
		t.Fatalf("scalar: %v %v", s, err)
	}
}

func TestTerms(t *testing.T) {
	got := terms("Red apple, red PEAR!")
	if len(got) != 3 || got[0] != "apple" || got[1] != "pear" || got[2] != "red" {
		t.Fatalf("terms %v", got)
	}
}
