package kafka

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

func TestValidTopic(t *testing.T) {
	for _, ok := range []string{"a", "orders.v1", "a_b-c", strings.Repeat("x", maxTopicLen), "..."} {
		if err := validTopic(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a b", "a/b", "é", strings.Repeat("x", maxTopicLen+1)} {
		if validTopic(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPerTenantTopicRefusesTheZeroTenant(t *testing.T) {
	if _, err := tenantTopic("p.")(tenancy.ID{}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("zero tenant: %v", err)
	}
}

// FuzzTenantTopic: for any valid prefix, names are valid Kafka topics, and
// two tenants share a name (or a metric name) only when they are equal.
func FuzzTenantTopic(f *testing.F) {
	f.Add("orders.", []byte("0123456789abcdef"), []byte("0123456789abcdeg"))
	f.Add("", []byte("aaaaaaaaaaaaaaaa"), []byte("aaaaaaaaaaaaaaaa"))
	f.Add(strings.Repeat("p", 217), []byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"), []byte("bbbbbbbbbbbbbbbb"))
	f.Fuzz(func(t *testing.T, prefix string, a, b []byte) {
		if validPrefix(prefix) != nil || len(a) != 16 || len(b) != 16 {
			return
		}
		ia, errA := tenancy.IDFromBytes([16]byte(a))
		ib, errB := tenancy.IDFromBytes([16]byte(b))
		if errA != nil || errB != nil || ia.IsZero() || ib.IsZero() {
			return
		}
		fn := tenantTopic(prefix)
		na, err := fn(ia)
		if err != nil {
			t.Fatal(err)
		}
		nb, err := fn(ib)
		if err != nil {
			t.Fatal(err)
		}
		if err := validTopic(na); err != nil {
			t.Fatalf("invalid name %q: %v", na, err)
		}
		if (na == nb) != (ia == ib) {
			t.Fatalf("tenants %s and %s map to %q and %q", ia, ib, na, nb)
		}
		if (metricName(na) == metricName(nb)) != (ia == ib) {
			t.Fatalf("metric names collide: %q %q", na, nb)
		}
	})
}
