package postgres

import (
	"regexp"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// FuzzTenantNames proves tenant-derived names injective and valid: two
// different tenants never share a schema or role, and every name is a
// plain identifier within PostgreSQL's 63-byte limit.
func FuzzTenantNames(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), []byte("0123456789abcdeg"), "tenant_")
	f.Add([]byte{15: 1}, []byte{15: 2}, "x")
	f.Add([]byte{0: 0xff, 15: 0xff}, []byte{0: 0xfe, 15: 0xff}, "a_very_long_prefix_0123456")
	f.Fuzz(func(t *testing.T, a, b []byte, prefix string) {
		if checkPrefix(prefix) != nil {
			return
		}
		var ab, bb [16]byte
		copy(ab[:], a)
		copy(bb[:], b)
		ta, errA := tenancy.IDFromBytes(ab)
		tb, errB := tenancy.IDFromBytes(bb)
		if errA != nil || errB != nil {
			return
		}
		for _, name := range []func(string, tenancy.ID) string{SchemaName, RoleName} {
			na, nb := name(prefix, ta), name(prefix, tb)
			if (na == nb) != (ta == tb) {
				t.Fatalf("%s and %s map to %q and %q", ta, tb, na, nb)
			}
			if len(na) > maxIdent || !identRE.MatchString(na) {
				t.Fatalf("invalid name %q", na)
			}
		}
	})
}

func TestPrefixBounds(t *testing.T) {
	for _, p := range []string{"", "Tenant_", "1x", "a-b", "x2345678901234567890123456789"} {
		if checkPrefix(p) == nil {
			t.Errorf("prefix %q accepted", p)
		}
	}
	if err := checkPrefix("x234567890123456789012345678"); err != nil {
		t.Error(err)
	}
}
