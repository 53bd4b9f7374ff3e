package mongo

import (
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

func FuzzNames(f *testing.F) {
	f.Add("orders", []byte("0123456789abcdef"), []byte("fedcba9876543210"))
	f.Add("a", make([]byte, 16), append(make([]byte, 15), 1))
	f.Fuzz(func(t *testing.T, base string, a, b []byte) {
		if len(a) != 16 || len(b) != 16 || validBase("base", base, maxDBPrefix) != nil {
			return
		}
		ida, erra := tenancy.IDFromBytes([16]byte(a))
		idb, errb := tenancy.IDFromBytes([16]byte(b))
		if erra != nil || errb != nil {
			return
		}
		for _, name := range []func(string, tenancy.ID) string{CollectionName, DatabaseName} {
			na, nb := name(base, ida), name(base, idb)
			if (na == nb) != (ida == idb) {
				t.Fatalf("not injective: %q for %x and %x", na, a, b)
			}
			if na == base {
				t.Fatalf("per-tenant name %q equals its base", na)
			}
		}
		// Static collection names hold no dot; static database names of the
		// per-tenant shape are refused at wiring time.
		if validBase("static", CollectionName(base, ida), 64) == nil {
			t.Fatal("a per-tenant collection name passes as a static one")
		}
		if err := ValidCollectionName(CollectionName(base, ida)); err != nil {
			t.Fatal(err)
		}
		if err := ValidDatabaseName(DatabaseName(base, ida)); err != nil {
			t.Fatal(err)
		}
		if !dbSpace.Contains(DatabaseName(base, ida)) {
			t.Fatal("the static-name guard misses a per-tenant database name")
		}
	})
}

func TestNameValidity(t *testing.T) {
	for _, bad := range []string{"", "a.b", "a$b", "a\x00b", "a b", "a/b", `a"b`, "a*b", "a<b", "a>b", "a:b", "a|b", "a?b", `a\b`,
		"a234567890123456789012345678901234567890123456789012345678901234"} {
		if ValidDatabaseName(bad) == nil {
			t.Errorf("database name %q accepted", bad)
		}
	}
	for _, bad := range []string{"", "a$b", "a\x00b", "system.users", "\xff"} {
		if ValidCollectionName(bad) == nil {
			t.Errorf("collection name %q accepted", bad)
		}
	}
	if dbSpace.Contains("app") || dbSpace.Contains("app_0A0A0A0A00004000800000000000000A") {
		t.Error("static names taken for per-tenant ones")
	}
}
