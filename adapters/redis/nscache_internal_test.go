package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// countingResolver is tenantNamespace("ns") counting its calls per tenant.
type countingResolver struct {
	mu    sync.Mutex
	calls map[tenancy.ID]int
}

func (c *countingResolver) resolve(id tenancy.ID) (string, error) {
	c.mu.Lock()
	c.calls[id]++
	c.mu.Unlock()
	return tenantNamespace("ns")(id)
}

func (c *countingResolver) count(id tenancy.ID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[id]
}

func nsRoute(fn nsFunc) route {
	return newRoute(&core{module: "m"}, &routeSpec{name: "sessions", kind: kindCache, namespace: fn})
}

// collidingTenants returns n distinct tenants that all land in one set of
// c and name the same way of it: what an attacker who knew the seed and
// chose tenant ids would aim for. The first nsWays fill the set; each one
// after takes the same way.
func collidingTenants(t *testing.T, c *nsCache, n int) []tenancy.ID {
	t.Helper()
	var out []tenancy.ID
	place := func(id tenancy.ID) uint64 { h := c.hash(id); return uint64(setOf(h))<<8 | h%nsWays }
	var want uint64
	for i := 1; len(out) < n; i++ {
		if i > 1<<26 {
			t.Fatal("no colliding tenants found")
		}
		id := tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i))
		switch p := place(id); {
		case len(out) == 0:
			want = p
			out = append(out, id)
		case p == want:
			out = append(out, id)
		}
	}
	return out
}

// Tenants sharing a cache set and way each get their own namespace
// whatever the order of their calls: an entry matches on the whole
// tenant, never on its set, and a tenant that lost its way resolves again.
// The first nsWays fill the set; the last and the one it displaces (the
// one that took the shared way) then take turns in it.
func TestNamespaceCacheCollidingTenants(t *testing.T) {
	cr := &countingResolver{calls: map[tenancy.ID]int{}}
	r := nsRoute(cr.resolve)
	ids := collidingTenants(t, r.nsc, nsWays+1)
	for round := range 3 {
		for _, id := range ids {
			ctx := tenancy.WithTenant(context.Background(), id)
			_, _, key, _, err := r.target(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if want := "tw:n:ns" + id.Hex() + ":c:sessions:k"; key != want {
				t.Fatalf("round %d: tenant %s got key %q, want %q", round, id, key, want)
			}
		}
	}
	shared := int(r.nsc.hash(ids[0]) % nsWays)
	for i, id := range ids {
		want := 1
		if i == shared || i == nsWays {
			want = 3
		}
		if n := cr.count(id); n != want {
			t.Errorf("tenant %d resolved %d times, want %d", i, n, want)
		}
	}
}

// Under concurrent calls, tenants contending for one way never see each
// other's namespace: a way's tenant and namespace are written and read
// together under the set's lock (run with -race).
func TestNamespaceCacheCollidingTenantsConcurrent(t *testing.T) {
	r := nsRoute(tenantNamespace("ns"))
	ids := collidingTenants(t, r.nsc, nsWays+4)
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Go(func() {
			ctx := tenancy.WithTenant(context.Background(), id)
			want := "tw:n:ns" + id.Hex() + ":c:sessions:k"
			for range 2000 {
				if _, _, key, _, err := r.target(ctx, "k"); err != nil || key != want {
					errs <- fmt.Errorf("tenant %s got key %q (%v), want %q", id, key, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A workload cycling in order over thousands of sequential tenant ids
// (what the C1000 pairs and many test fixtures use) keeps them cached:
// after one pass, a second resolves almost none again. The direct-mapped
// cache this replaced put 1,000 such ids in 511 slots and resolved about
// three calls in four.
func TestNamespaceCacheHoldsThousands(t *testing.T) {
	for _, tc := range []struct {
		tenants int
		// most resolutions allowed in the second pass: a simulation of 200
		// seeds (each a fresh draw of sets and ways) resolved none at 1,000
		// and 2.9% to 4.8% at 10,000.
		most int
	}{{1000, 10}, {10000, 700}} {
		cr := &countingResolver{calls: map[tenancy.ID]int{}}
		r := nsRoute(cr.resolve)
		ctxs := make([]context.Context, tc.tenants)
		for i := range ctxs {
			ctxs[i] = tenancy.WithTenant(context.Background(), tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1)))
		}
		resolved := 0
		for pass := range 2 {
			before := 0
			for _, ctx := range ctxs {
				id, _ := tenancy.Require(ctx)
				before += cr.count(id)
			}
			for _, ctx := range ctxs {
				if _, _, _, _, err := r.target(ctx, "k"); err != nil {
					t.Fatal(err)
				}
			}
			after := 0
			for _, ctx := range ctxs {
				id, _ := tenancy.Require(ctx)
				after += cr.count(id)
			}
			resolved = after - before
			if pass == 0 && resolved != tc.tenants {
				t.Fatalf("first pass resolved %d of %d", resolved, tc.tenants)
			}
		}
		t.Logf("%d tenants: the second pass resolved %d", tc.tenants, resolved)
		if resolved > tc.most {
			t.Errorf("%d tenants cycled in order: the second pass resolved %d, want at most %d", tc.tenants, resolved, tc.most)
		}
	}
}

// A tenant in use is resolved once; a tenant whose slot nobody else took
// stays cached.
func TestNamespaceCacheHit(t *testing.T) {
	cr := &countingResolver{calls: map[tenancy.ID]int{}}
	r := nsRoute(cr.resolve)
	a := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	ctx := tenancy.WithTenant(context.Background(), a)
	for range 5 {
		if _, _, key, _, err := r.target(ctx, "k"); err != nil || key != "tw:n:ns"+a.Hex()+":c:sessions:k" {
			t.Fatal(key, err)
		}
	}
	if n := cr.count(a); n != 1 {
		t.Fatalf("resolved %d times, want 1", n)
	}
}

// Two routes never share an entry: the same tenant gets each route's own
// resolver's namespace.
func TestNamespaceCachePerRoute(t *testing.T) {
	a := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	ctx := tenancy.WithTenant(context.Background(), a)
	r1, r2 := nsRoute(tenantNamespace("one")), nsRoute(tenantNamespace("two"))
	for range 2 {
		_, _, k1, _, err1 := r1.target(ctx, "k")
		_, _, k2, _, err2 := r2.target(ctx, "k")
		if err1 != nil || err2 != nil || k1 != "tw:n:one"+a.Hex()+":c:sessions:k" || k2 != "tw:n:two"+a.Hex()+":c:sessions:k" {
			t.Fatalf("%q %v / %q %v", k1, err1, k2, err2)
		}
	}
}

// A resolver's error or invalid name is never kept: each call asks again
// and fails closed, and the first good answer is used once it comes.
func TestNamespaceCacheKeepsNoFailure(t *testing.T) {
	a := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	ctx := tenancy.WithTenant(context.Background(), a)
	boom := errors.New("directory down")
	answers := []func() (string, error){
		func() (string, error) { return "", boom },
		func() (string, error) { return "bad:name", nil },
		func() (string, error) { return "", boom },
		func() (string, error) { return "good", nil },
	}
	calls := 0
	r := nsRoute(func(tenancy.ID) (string, error) {
		calls++
		return answers[min(calls, len(answers))-1]()
	})
	for i := range 3 {
		if _, _, _, _, err := r.target(ctx, "k"); err == nil {
			t.Fatalf("call %d: a failed resolution succeeded", i)
		}
	}
	for range 2 {
		if _, _, key, _, err := r.target(ctx, "k"); err != nil || key != "tw:n:good:c:sessions:k" {
			t.Fatalf("%q %v", key, err)
		}
	}
	if calls != 4 {
		t.Fatalf("resolver called %d times, want 4 (three failures, then one success kept)", calls)
	}
}

// Many tenants spread over the sets (a hash that used only part of the
// id would put sequential ids in a few), and the cache never holds more
// than its ways: its size does not grow with the tenant count.
func TestNamespaceCacheSpreadsAndStaysBounded(t *testing.T) {
	c := newNSCache()
	if _, ok := c.get(tenancy.ID{}); ok {
		t.Fatal("an empty cache matched the zero tenant")
	}
	c.put(tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a"), "a")
	if _, ok := c.get(tenancy.ID{}); ok {
		t.Fatal("an unused way matched the zero tenant")
	}
	// Sequential ids differing in their last bytes, then in their first.
	for _, format := range []string{"00000000-0000-4000-9000-%012x", "%08x-0000-4000-9000-000000000000"} {
		used := map[int]int{}
		for i := range 40000 {
			id := tenancy.MustParseID(fmt.Sprintf(format, i+1))
			c.put(id, "ns"+id.Hex())
			used[setOf(c.hash(id))]++
		}
		// 40,000 random ids would leave about e^-19.5 of 2,048 sets empty,
		// and put more than 45 in one almost never (mean 19.5, sd 4.4).
		if len(used) < nsSets {
			t.Fatalf("40,000 tenants %s used %d of %d sets", format, len(used), nsSets)
		}
		for set, n := range used {
			if n > 45 {
				t.Fatalf("40,000 tenants %s put %d in set %d", format, n, set)
			}
		}
	}
	held := 0
	for i := range c.sets {
		if s := c.sets[i].Load(); s != nil {
			for _, e := range s.ways {
				if e.ns != "" {
					held++
				}
			}
		}
	}
	if held > nsSets*nsWays {
		t.Fatalf("%d entries", held)
	}
}

// The adapter's work per call before the round trip allocates only the
// key, on a tagged route and on a namespace route whose tenant is cached;
// a namespace route's miss adds only the resolver's own string.
func TestTargetAllocations(t *testing.T) {
	a := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	ctx := tenancy.WithTenant(context.Background(), a)
	tagged := newRoute(&core{module: "m"}, &routeSpec{name: "sessions", kind: kindCache, tenantAware: true})
	ns := nsRoute(tenantNamespace("ns"))
	// The first nsWays tenants fill a set; the last two then take turns in
	// the way they share, each call evicting the other.
	ids := collidingTenants(t, ns.nsc, nsWays+2)
	for _, id := range ids[:nsWays] {
		if _, _, _, _, err := ns.target(tenancy.WithTenant(context.Background(), id), "k"); err != nil {
			t.Fatal(err)
		}
	}
	ctxs := []context.Context{tenancy.WithTenant(context.Background(), ids[nsWays]), tenancy.WithTenant(context.Background(), ids[nsWays+1])}
	i := 0
	for _, c := range []struct {
		name string
		f    func()
		want float64
	}{
		{"tagged", func() { _, _, _, _, _ = tagged.target(ctx, "user:42") }, 1},
		{"namespace cached", func() { _, _, _, _, _ = ns.target(ctx, "user:42") }, 1},
		{"namespace evicted", func() { i++; _, _, _, _, _ = ns.target(ctxs[i%2], "user:42") }, 2},
	} {
		if n := testing.AllocsPerRun(200, c.f); n != c.want {
			t.Errorf("%s: %v allocations per call, want %v", c.name, n, c.want)
		}
	}
}
