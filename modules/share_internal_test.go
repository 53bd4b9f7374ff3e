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

func BenchmarkTenantShareHold(b *testing.B) {
	s := &tenantShare{module: "m", Share: Share{Calls: 4}}
	ctx := context.Background()
	id := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	b.ReportAllocs()
	for b.Loop() {
		end, err := s.hold(ctx, id, "toy", "r")
		if err != nil {
			b.Fatal(err)
		}
		end()
	}
}

// A tenant's hold and its end allocate nothing when the tenant is within
// its share: the count of an ended tenant is reused, its end with it.
func TestTenantShareHoldDoesNotAllocate(t *testing.T) {
	s := &tenantShare{module: "m", Share: Share{Calls: 4}}
	ctx := context.Background()
	a := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	b := tenancy.MustParseID("0b0b0b0b-0000-4000-8000-00000000000a")
	allocs := testing.AllocsPerRun(1000, func() {
		// a's count goes with its end; b, on the same stripe, takes it.
		for _, id := range []tenancy.ID{a, b} {
			end, err := s.hold(ctx, id, "toy", "r")
			if err != nil {
				t.Fatal(err)
			}
			end()
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per hold and end, want 0", allocs)
	}
}
