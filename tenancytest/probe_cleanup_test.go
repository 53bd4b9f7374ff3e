package tenancytest_test

import (
	"testing"

	"github.com/tenantwire/tenantwire/tenancytest"
)

// Boundary removes what it wrote when the test ends: a second probe on
// the same store with the same record id, its tenants swapped, passes
// (with A's record left behind, B would find it and it would read as a
// leak), and so does a rerun with the same tenants and id.
func TestBoundaryCleansUpItsRecord(t *testing.T) {
	s := &store{}
	p := s.probe()
	swapped := p
	swapped.A, swapped.B = tenancytest.TenantB, tenancytest.TenantA
	for i, probe := range []tenancytest.Probe{p, swapped, p} {
		t.Run("", func(t *testing.T) {
			if failed := run(t, probe); len(failed) > 0 {
				t.Fatalf("probe %d on a store a probe used before: %v", i, failed)
			}
		})
		if len(s.data) != 0 {
			t.Fatalf("probe %d left %v behind", i, s.data)
		}
	}
}
