package tenancy_test

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"00000000-0000-0000-0000-000000000001", "A1B2C3D4-E5F6-4789-ABCD-EF0123456789", "", "{}", "00000000-0000-0000-0000-000000000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := tenancy.ParseID(s)
		if err != nil {
			if !id.IsZero() {
				t.Fatalf("ParseID(%q) failed but returned %v", s, id)
			}
			return
		}
		if id.IsZero() {
			t.Fatalf("ParseID(%q) returned the zero ID without error", s)
		}
		if got := id.String(); got != strings.ToLower(s) {
			t.Fatalf("ParseID(%q).String() = %q, want the lowercased input", s, got)
		}
		back, err := tenancy.ParseID(id.String())
		if err != nil || back != id {
			t.Fatalf("round trip of %q: %v, %v", s, back, err)
		}
	})
}

func FuzzParseTier(f *testing.F) {
	for _, s := range []string{"none", "tagged", "namespace", "dedicated", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tier, err := tenancy.ParseTier(s)
		if err != nil {
			return
		}
		if !tier.Valid() || tier.String() != s {
			t.Fatalf("ParseTier(%q) = %v", s, tier)
		}
	})
}

func FuzzParseOrigin(f *testing.F) {
	for _, s := range []string{"structured", "compiled", "raw", "", "verified"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := tenancy.ParseOrigin(s)
		if err != nil {
			if tenancy.CodeOf(err) != tenancy.CodeStatementOriginUnknown {
				t.Fatalf("ParseOrigin(%q) error %v lacks statement_origin_unknown", s, err)
			}
			return
		}
		if _, err := o.Floor(); err != nil || o.String() != s {
			t.Fatalf("ParseOrigin(%q) = %v (floor err %v)", s, o, err)
		}
	})
}
