package shards_test

import (
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestParkingBackoffIsBoundedAndStateShort: the wait doubles per failure
// in a row and is capped; a success ends
// the parking; an entry due for longer than ten times the cap is dropped,
// so the state holds only tenants parked lately, and a failure a little
// longer than the cap after the last (a worker's slow pass) still doubles.
func TestParkingBackoffIsBoundedAndStateShort(t *testing.T) {
	p := shards.NewParking(10*time.Millisecond, 80*time.Millisecond)
	a, b := tenancytest.TenantA, tenancytest.TenantB
	now := time.Now()
	for i, full := range []time.Duration{10, 20, 40, 80, 80, 80} {
		full *= time.Millisecond
		wait, fails := p.Fail(a, now)
		if fails != i+1 || wait != full {
			t.Fatalf("failure %d: wait %v (fails %d), want %v", i+1, wait, fails, full)
		}
		if !p.Parked(a, now) || p.Parked(a, now.Add(wait)) {
			t.Fatalf("failure %d: parked for the wrong span", i+1)
		}
	}
	if p.Parked(b, now) {
		t.Fatal("a tenant that never failed is parked")
	}
	skip, next := p.Skip(now)
	if len(skip) != 1 || skip[0] != a || next.IsZero() {
		t.Fatalf("skip %v next %v", skip, next)
	}
	p.Ok(a)
	if p.Len() != 0 || p.Parked(a, now) {
		t.Fatal("a success left the tenant parked")
	}
	p.Fail(b, now)
	p.Fail(b, now.Add(10*time.Millisecond+200*time.Millisecond))
	if wait, fails := p.Fail(b, now.Add(500*time.Millisecond)); fails != 3 || wait != 40*time.Millisecond {
		t.Fatalf("a failure 2.5 caps after the last due: wait %v fails %d, want 40ms and 3", wait, fails)
	}
	p.Ok(b)
	p.Fail(b, now)
	if skip, _ := p.Skip(now.Add(time.Second)); len(skip) != 0 || p.Len() != 0 {
		t.Fatalf("a long-due entry was kept: %d", p.Len())
	}
	if _, fails := p.Fail(b, now.Add(2*time.Second)); fails != 1 {
		t.Fatalf("a failure long after the last starts again at 1, got %d", fails)
	}
}
