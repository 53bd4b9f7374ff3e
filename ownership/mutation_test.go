package ownership_test

// Tests that pin down the cache bound mutation testing found unchecked
// (make mutate; docs/reliability.md).

import (
	"errors"
	"testing"

	"github.com/tenantwire/tenantwire/ownership"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func cacheAll(t *testing.T, g *ownership.Gate, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := g.Check(ctxA, id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
}

// Below the bound every positive stays cached; at the bound the cache is
// cleared before the next one goes in.
func TestGateCacheBound(t *testing.T) {
	tb := &table{owner: map[string]tenancy.ID{"a": tenancytest.TenantA, "b": tenancytest.TenantA, "c": tenancytest.TenantA, "d": tenancytest.TenantA}}
	g := ownership.New(ownership.Config{Lookup: tb.lookup, MaxEntries: 3})
	cacheAll(t, g, "a", "b", "c")
	if g.Len() != 3 {
		t.Fatalf("%d positives cached under a bound of 3, want 3", g.Len())
	}
	calls := tb.calls
	cacheAll(t, g, "a", "b", "c")
	if tb.calls != calls {
		t.Fatalf("%d lookups for cached positives", tb.calls-calls)
	}
	cacheAll(t, g, "d")
	if g.Len() != 1 {
		t.Fatalf("%d positives after overflow, want only the new one", g.Len())
	}
}

// MaxEntries 0 (or less) means the default bound, not a cache of one.
func TestGateDefaultBound(t *testing.T) {
	for _, max := range []int{0, -1} {
		tb := &table{owner: map[string]tenancy.ID{"a": tenancytest.TenantA, "b": tenancytest.TenantA}}
		g := ownership.New(ownership.Config{Lookup: tb.lookup, MaxEntries: max})
		cacheAll(t, g, "a", "b")
		if g.Len() != 2 {
			t.Errorf("MaxEntries %d: %d positives cached, want 2", max, g.Len())
		}
	}
}

func TestDeniedMessageNamesTheCause(t *testing.T) {
	tb := &table{err: errors.New("pool exhausted")}
	err := ownership.New(ownership.Config{Lookup: tb.lookup}).Check(ctxA, "m1")
	if want := "ownership: id not owned by the bound tenant: lookup failed: pool exhausted"; err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}
