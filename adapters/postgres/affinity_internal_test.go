package postgres

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/tenancy"
)

// testAffine is a split of n sub-pools with no connections behind them:
// pick's choices, told apart by index.
func testAffine(n int) (*affinePools, map[*pgxpool.Pool]int) {
	a := &affinePools{pools: make([]*pgxpool.Pool, n), load: make([]paddedCount, n), release: make([]func(), n)}
	index := map[*pgxpool.Pool]int{}
	for i := range n {
		a.pools[i] = new(pgxpool.Pool)
		index[a.pools[i]] = i
		count := &a.load[i].n
		a.release[i] = func() { count.Add(-1) }
	}
	return a, index
}

func seqTenant(i int) tenancy.ID {
	return tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-c000-%012x", i+1))
}

// TestAffineSpreadsSequentialTenantsEvenly: sequential ids, common in
// practice, still fill every sub-pool within a fifth of the mean.
func TestAffineSpreadsSequentialTenantsEvenly(t *testing.T) {
	a, index := testAffine(15)
	const n = 15000
	per := make([]int, 15)
	for i := range n {
		p, release := a.pick(seqTenant(i))
		per[index[p]]++
		release()
	}
	for i, k := range per {
		if k < n/15*4/5 || k > n/15*6/5 {
			t.Errorf("sub-pool %d got %d of %d tenants (mean %d): %v", i, k, n, n/15, per)
		}
	}
}

// TestAffineKeepsATenantHomeWhileItIsFree: a tenant's call goes to its
// home sub-pool when that is free, else to a free one; once every
// sub-pool is busy, to the least loaded, the home one on a tie. Every
// release gives back what its pick took.
func TestAffineKeepsATenantHomeWhileItIsFree(t *testing.T) {
	a, index := testAffine(4)
	id := seqTenant(7)
	home := index[a.home(id)]
	var releases []func()
	take := func() int {
		p, release := a.pick(id)
		releases = append(releases, release)
		return index[p]
	}
	if got := take(); got != home {
		t.Fatalf("first call on sub-pool %d, home %d", got, home)
	}
	releases[0]()
	releases = releases[:0]
	if got := take(); got != home {
		t.Fatalf("a call after the first ended on sub-pool %d, home %d", got, home)
	}
	seen := map[int]bool{home: true}
	for range 3 {
		got := take()
		if seen[got] {
			t.Fatalf("a call went to sub-pool %d, which was busy, while another was free (loads %v)", got, loads(a))
		}
		seen[got] = true
	}
	if got := take(); got != home {
		t.Fatalf("with every sub-pool at one call, the next went to %d, not home %d", got, home)
	}
	for range 3 {
		if got := take(); got == home {
			t.Fatalf("a call queued on the home sub-pool, loaded %v, past the others", loads(a))
		}
	}
	for _, l := range loads(a) {
		if l != 2 {
			t.Fatalf("loads %v, want 2 each", loads(a))
		}
	}
	for _, r := range releases {
		r()
	}
	for _, l := range loads(a) {
		if l != 0 {
			t.Fatalf("after every release loads are %v", loads(a))
		}
	}
}

// TestAffineNoTenantStartsAtTheFirstSubPool: calls with no tenant bound
// (relays, the gate's listener) go to sub-pool 0, which holds two.
func TestAffineNoTenantStartsAtTheFirstSubPool(t *testing.T) {
	a, index := testAffine(4)
	p, release := a.pick(tenancy.ID{})
	defer release()
	if index[p] != 0 || a.home(tenancy.ID{}) != a.pools[0] {
		t.Fatalf("a call with no tenant went to sub-pool %d", index[p])
	}
}

func loads(a *affinePools) []int32 {
	out := make([]int32, len(a.load))
	for i := range a.load {
		out[i] = a.load[i].n.Load()
	}
	return out
}
