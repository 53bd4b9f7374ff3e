package modules

import (
	"context"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// tenantsOn returns n tenants whose calls count on stripes distinct from
// each other's.
func tenantsOn(n int) []tenancy.ID {
	var out []tenancy.ID
	seen := map[int]bool{}
	for i := 1; len(out) < n; i++ {
		id := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-" + hex12(i))
		if s := stripeOf(id); !seen[s] {
			seen[s] = true
			out = append(out, id)
		}
	}
	return out
}

func hex12(i int) string {
	const digits = "0123456789abcdef"
	b := []byte("000000000000")
	for j := len(b) - 1; i > 0; j-- {
		b[j] = digits[i%16]
		i /= 16
	}
	return string(b)
}

// TestDrainSeesCallsOfEveryEpoch: a call of A that entered before an
// unrelated drain (of B, which flipped the epoch) is still waited for by
// A's own drain, after a second flip; and a long call of a tenant on
// another stripe does not hold A's drain.
func TestDrainSeesCallsOfEveryEpoch(t *testing.T) {
	s := &Suspensions{}
	ids := tenantsOn(3)
	a, b, c := ids[0], ids[1], ids[2]
	endA, err := s.Enter(a, "kv", "m", "r")
	if err != nil {
		t.Fatal(err)
	}
	endC, err := s.Enter(c, "kv", "m", "r") // never ends during the test
	if err != nil {
		t.Fatal(err)
	}
	defer endC()
	s.Suspend(b)
	if err := s.Drain(context.Background(), b); err != nil {
		t.Fatalf("B's drain waited for other stripes' calls: %v", err)
	}
	s.Suspend(a)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Drain(ctx, a); err == nil {
		t.Fatal("A's drain ended while A's call from before B's drain was in flight")
	}
	endA()
	if err := s.Drain(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}
