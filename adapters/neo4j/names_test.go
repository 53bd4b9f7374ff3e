package neo4j

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

func TestValidDatabaseName(t *testing.T) {
	for _, ok := range []string{"abc", "acme-0a0a", "a.b-c9", "a" + strings.Repeat("b", 62)} {
		if err := ValidDatabaseName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "ab", "a" + strings.Repeat("b", 63), "1abc", "-abc", "Abc", "ab_c", "ab c",
		"ab`c", "système", "system", "systemx", "ab\x00"} {
		if ValidDatabaseName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestTenantDatabase(t *testing.T) {
	name, err := tenantDatabase("acme")(tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a"))
	if err != nil || name != "acme-0a0a0a0a00004000800000000000000a" {
		t.Fatalf("%q %v", name, err)
	}
	if _, err := tenantDatabase(strings.Repeat("a", maxDatabasePrefix))(tenancy.Default); err != nil {
		t.Fatal(err)
	}
	if _, err := tenantDatabase(strings.Repeat("a", maxDatabasePrefix+1))(tenancy.Default); err == nil {
		t.Fatal("overlong prefix accepted")
	}
}

// Tenant database names are injective (distinct tenants, distinct
// names, for any one prefix) and valid whenever the prefix is accepted.
func FuzzTenantDatabase(f *testing.F) {
	f.Add("acme", []byte("0123456789abcdef"), []byte("0123456789abcdeg"))
	f.Add("a", []byte{1}, []byte{2})
	f.Add("x.y-z", make([]byte, 16), []byte{0xff})
	f.Fuzz(func(t *testing.T, prefix string, a, b []byte) {
		var ra, rb [16]byte
		copy(ra[:], a)
		copy(rb[:], b)
		ida, erra := tenancy.IDFromBytes(ra)
		idb, errb := tenancy.IDFromBytes(rb)
		if erra != nil || errb != nil {
			return
		}
		fn := tenantDatabase(prefix)
		na, err := fn(ida)
		if err != nil {
			if validPrefix(prefix) == nil {
				t.Fatalf("valid prefix %q refused: %v", prefix, err)
			}
			return
		}
		nb, err := fn(idb)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidDatabaseName(na); err != nil {
			t.Fatalf("invalid name %q: %v", na, err)
		}
		if (na == nb) != (ida == idb) {
			t.Fatalf("injectivity: %s→%q, %s→%q", ida, na, idb, nb)
		}
	})
}
