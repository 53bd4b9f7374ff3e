package mongo

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// rawOf is v as a stored field: the value of "d" in a one-field document.
func rawOf(t testing.TB, v any) bson.RawValue {
	t.Helper()
	b, err := bson.Marshal(bson.D{{Key: "d", Value: v}})
	if err != nil {
		t.Fatal(err)
	}
	return bson.Raw(b).Lookup("d")
}

func fastJSON(v bson.RawValue) ([]byte, bool) {
	return appendJSON(nil, bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
}

// The JSON decodeValue hands to encoding/json is what the driver's own
// extended JSON writer prints, byte for byte, so reading a record through
// appendJSON decodes exactly as before.
func TestAppendJSONIsTheDriversJSON(t *testing.T) {
	check := func(v any) {
		t.Helper()
		raw := rawOf(t, v)
		want, err := driverJSON(raw)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		got, ok := fastJSON(raw)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("%#v:\n got %s (%v)\nwant %s", v, got, ok, want)
		}
	}
	for _, s := range []string{"", "plain", `q"uo\te`, "\n\r\t\b\f\x00\x01\x1f\x7f", "<&>'", "é日本\U0001F600",
		"\u2028\u2029", "bad\xffutf8\xc3", "\xed\xa0\x80"} {
		check(s)
		check(bson.D{{Key: strings.ReplaceAll(s, "\x00", ""), Value: s}}) // keys hold no NUL
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e20, 1e21, 1e-7, 123456789.125,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 3} {
		check(f)
	}
	for _, v := range []any{int32(0), int32(math.MinInt32), int64(math.MaxInt64), int64(math.MinInt64),
		true, false, nil, bson.D{}, bson.A{}, bson.A{nil, bson.A{}, bson.D{}},
		bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: bson.A{int64(1), 2.5, "x", bson.D{{Key: "c", Value: nil}}}}}}}} {
		check(v)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		check(randomValue(rng, 3))
	}
}

// randomValue is a value of the shapes encodeValue stores.
func randomValue(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(8); {
	case k == 0 && depth > 0:
		d := bson.D{}
		for range rng.IntN(4) {
			d = append(d, bson.E{Key: strings.ReplaceAll(randomString(rng), "\x00", ""), Value: randomValue(rng, depth-1)})
		}
		return d
	case k == 1 && depth > 0:
		a := bson.A{}
		for range rng.IntN(4) {
			a = append(a, randomValue(rng, depth-1))
		}
		return a
	case k == 2:
		return rng.Int64() >> rng.IntN(64)
	case k == 3:
		return math.Float64frombits(rng.Uint64()>>2) * float64(1-2*rng.IntN(2))
	case k == 4:
		return float64(rng.IntN(1000)) / 8
	case k == 5:
		return rng.IntN(2) == 0
	case k == 6:
		return nil
	}
	return randomString(rng)
}

func randomString(rng *rand.Rand) string {
	const alphabet = "ab\"\\\n\x00\x1f\x7fé\xff\u2028日"
	var b strings.Builder
	for range rng.IntN(8) {
		i := rng.IntN(len(alphabet))
		b.WriteByte(alphabet[i])
	}
	return b.String()
}

// Types encodeValue never stores, and malformed values, are left to the
// driver: appendJSON declines them instead of guessing.
func TestAppendJSONDeclines(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), math.Inf(-1), bson.NewObjectID(),
		bson.NewDateTimeFromTime(time.Unix(1, 0)), bson.Binary{Data: []byte{1}}, bson.Decimal128{},
		bson.D{{Key: "nested", Value: bson.NewObjectID()}}, bson.A{int64(1), bson.Regex{Pattern: "x"}}} {
		if js, ok := fastJSON(rawOf(t, v)); ok {
			t.Errorf("%#v printed as %s", v, js)
		}
	}
	doc := rawOf(t, bson.D{{Key: "a", Value: "b"}})
	for _, bad := range []bsoncore.Value{
		{Type: bsoncore.TypeEmbeddedDocument, Data: doc.Value[:len(doc.Value)-1]},
		{Type: bsoncore.TypeEmbeddedDocument, Data: []byte{5, 0, 0}},
		{Type: bsoncore.TypeString, Data: []byte{9, 0, 0, 0, 'a', 0}},
		{Type: bsoncore.TypeString, Data: []byte{2, 0, 0, 0, 'a', 'b'}},
		{Type: bsoncore.TypeInt64, Data: []byte{1, 2}},
	} {
		if js, ok := appendJSON(nil, bad); ok {
			t.Errorf("malformed %v % x printed as %s", bad.Type, bad.Data, js)
		}
	}
}

// A stored value appendJSON declines (a field another writer stored as
// a date) still decodes, through the driver's writer.
func TestDecodeValueFallsBackToTheDriver(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v, err := decodeValue[map[string]any](rawOf(t, bson.D{{Key: "n", Value: int64(7)}, {Key: "at", Value: bson.NewDateTimeFromTime(when)}}))
	if err != nil {
		t.Fatal(err)
	}
	if v["n"] != float64(7) || v["at"] == nil {
		t.Fatalf("%v", v)
	}
	at, ok := v["at"].(map[string]any)
	if !ok || at["$date"] != "2026-01-02T03:04:05Z" {
		t.Fatalf("date decoded as %#v", v["at"])
	}
}

// keeper keeps the JSON it was given, as encoding/json tells an
// Unmarshaler not to.
type keeper struct{ kept []byte }

func (k *keeper) UnmarshalJSON(b []byte) error { k.kept = b; return nil }

// One record's bytes are never reused for the next record's: a value
// type that keeps its input against the contract still keeps its own.
func TestDecodeBuffersAreNotShared(t *testing.T) {
	a, err := decodeValue[keeper](rawOf(t, bson.D{{Key: "secret", Value: "tenant-a"}}))
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := decodeValue[keeper](rawOf(t, bson.D{{Key: "secret", Value: "tenant-b"}})); err != nil {
			t.Fatal(err)
		}
	}
	if string(a.kept) != `{"secret":"tenant-a"}` {
		t.Fatalf("tenant A's value now reads %s", a.kept)
	}
}
