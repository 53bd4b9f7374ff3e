package modules

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// The share keeps state only for tenants with calls in flight: 10,000
// tenants each holding a call have 10,000 entries, and none once every
// call ended.
func TestTenantShareStateIsBoundedByCallsInFlight(t *testing.T) {
	s := &tenantShare{module: "m", Share: Share{Calls: 1}}
	ends := make([]func(), 0, 10000)
	for i := range 10000 {
		var b [16]byte
		b[0], b[1], b[2], b[15] = 1, byte(i>>8), byte(i), byte(i*7)
		id, err := tenancy.IDFromBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		end, err := s.hold(context.Background(), id, "toy", "r")
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end)
	}
	if n := s.entries(); n != 10000 {
		t.Fatalf("%d entries with 10,000 tenants in flight", n)
	}
	for _, end := range ends {
		end()
	}
	if n := s.entries(); n != 0 {
		t.Fatalf("%d entries left after every call ended", n)
	}
}
