package redis

// Tests that pin down key building mutation testing found unchecked (make
// mutate; docs/reliability.md).

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

func TestScopeMarkerEveryWiring(t *testing.T) {
	for _, c := range []struct {
		global, routed, ns, aware bool
		want                      string
		tenant, namespace         bool
	}{
		{false, false, false, false, "s", false, false},
		{true, true, true, true, "g", false, false},
		{false, true, false, false, "d", true, false},
		{false, false, true, false, "n", false, true},
		{false, false, false, true, "t", true, false},
		{false, true, true, false, "dn", true, true},
		{false, true, false, true, "dt", true, false},
		{false, false, true, true, "nt", true, true},
		{false, true, true, true, "dnt", true, true},
	} {
		m := scopeMarker(c.global, c.routed, c.ns, c.aware)
		if m != c.want || markerHasTenant(m) != c.tenant || markerHasNamespace(m) != c.namespace {
			t.Errorf("scopeMarker(global=%v routed=%v ns=%v aware=%v) = %q (tenant %v, namespace %v); want %q (%v, %v)",
				c.global, c.routed, c.ns, c.aware, m, markerHasTenant(m), markerHasNamespace(m), c.want, c.tenant, c.namespace)
		}
	}
}

// A routed client's keys carry the tenant even without TenantAware.
func TestRoutedKeyCarriesTheTenant(t *testing.T) {
	id := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	if got, want := buildKey("d", "", id, 'c', "r", "k"), "tw:d:0a0a0a0a00004000800000000000000a:c:r:k"; got != want {
		t.Errorf("buildKey(d) = %q, want %q", got, want)
	}
}

// A user key made mostly of escaped bytes is escaped whole, however long.
func TestKeyOfManyEscapes(t *testing.T) {
	user := strings.Repeat("{%}", 100) + "x"
	want := "tw:s:c:r:" + strings.Repeat("%7B%25%7D", 100) + "x"
	if got := buildKey("s", "", tenancy.ID{}, 'c', "r", user); got != want {
		t.Fatalf("buildKey = %q, want %q", got, want)
	}
	if n := escapedLen(user); n != len(want)-len("tw:s:c:r:") {
		t.Fatalf("escapedLen = %d, want %d", n, len(want)-len("tw:s:c:r:"))
	}
	back, ok := unescape(strings.TrimPrefix(want, "tw:s:c:r:"))
	if !ok || back != user {
		t.Fatalf("unescape = %q, %v", back, ok)
	}
}

func TestUnescapeEdges(t *testing.T) {
	for in, want := range map[string]string{"%25": "%", "a%7B": "a{", "%7Dz": "}z", "plain": "plain", "": ""} {
		if got, ok := unescape(in); !ok || got != want {
			t.Errorf("unescape(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"a%", "a%7", "%7b", "%7B{", "%25}"} {
		if got, ok := unescape(in); ok {
			t.Errorf("unescape(%q) = %q, accepted", in, got)
		}
	}
}

func TestValidNameEdges(t *testing.T) {
	for _, ok := range []string{"az", "AZ", "09", "_.-", strings.Repeat("n", 128)} {
		if err := validName("route", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("n", 129), "a`", "a{", "a@", "a[", "a/", "a:", "a,"} {
		if validName("route", bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The longest route name builds a key like any other (the size estimate
// for the builder stays positive).
func TestKeyOfTheLongestRoute(t *testing.T) {
	route := strings.Repeat("r", 128)
	if got, want := buildKey("s", "", tenancy.ID{}, 'c', route, "k"), "tw:s:c:"+route+":k"; got != want {
		t.Fatalf("buildKey = %q, want %q", got, want)
	}
}

// The longest namespace builds a key like any other.
func TestKeyOfTheLongestNamespace(t *testing.T) {
	ns := strings.Repeat("n", 128)
	if got, want := buildKey("n", ns, tenancy.ID{}, 'c', "r", ""), "tw:n:"+ns+":c:r:"; got != want {
		t.Fatalf("buildKey = %q, want %q", got, want)
	}
}
