package tenancytest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancytest"
)

// With Probe.Cleanup, Boundary removes what it wrote when the test ends:
// a second probe on the same store with the same record id, its tenants
// swapped, passes (with A's record left behind, B would find it and it
// would read as a leak), and so does a rerun with the same tenants and id.
// A removal that fails fails the test.
func TestBoundaryCleansUpItsRecord(t *testing.T) {
	s := &store{}
	p := s.probe()
	p.Cleanup = func(ctx context.Context) error { delete(s.data, s.key(ctx)); return nil }
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

func TestBoundaryCleanupFailureFails(t *testing.T) {
	p := (&store{}).probe()
	p.Cleanup = func(context.Context) error { return errors.New("gone") }
	var failed []string
	t.Run("", func(t *testing.T) {
		r := &recorder{TB: t}
		t.Cleanup(func() { failed = r.failed }) // runs after the probe's own
		done := make(chan struct{})
		go func() {
			defer close(done)
			tenancytest.Boundary(r, p)
		}()
		<-done
	})
	if len(failed) != 1 || !strings.Contains(failed[0], "removing A's record: gone") {
		t.Fatalf("a failed removal reported %v", failed)
	}
}
