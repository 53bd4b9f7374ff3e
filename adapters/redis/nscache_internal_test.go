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

// collidingTenants returns n distinct tenants that all land in one slot of
// the namespace cache: what an attacker choosing tenant ids would aim for.
func collidingTenants(t *testing.T, n int) []tenancy.ID {
	t.Helper()
	var out []tenancy.ID
	want := -1
	for i := 1; len(out) < n; i++ {
		if i > 1<<24 {
			t.Fatal("no colliding tenants found")
		}
		id := tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i))
		switch s := nsSlotOf(id); {
		case want < 0:
			want = s
			out = append(out, id)
		case s == want:
			out = append(out, id)
		}
	}
	return out
}

// Tenants sharing a cache slot each get their own namespace whatever the
// order of their calls: an entry matches on the whole tenant, never on
// its slot, and a tenant that lost its slot resolves again.
func TestNamespaceCacheCollidingTenants(t *testing.T) {
	cr := &countingResolver{calls: map[tenancy.ID]int{}}
	r := nsRoute(cr.resolve)
	ids := collidingTenants(t, 3)
	for round := range 3 {
		for _, id := range ids {
			ctx := tenancy.WithTenant(context.Background(), id)
			_, key, _, err := r.target(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if want := "tw:n:ns" + id.Hex() + ":c:sessions:k"; key != want {
				t.Fatalf("round %d: tenant %s got key %q, want %q", round, id, key, want)
			}
		}
	}
	for _, id := range ids {
		if n := cr.count(id); n != 3 {
			t.Errorf("tenant %s resolved %d times, want 3 (each call after another tenant took the slot)", id, n)
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
		if _, key, _, err := r.target(ctx, "k"); err != nil || key != "tw:n:ns"+a.Hex()+":c:sessions:k" {
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
		_, k1, _, err1 := r1.target(ctx, "k")
		_, k2, _, err2 := r2.target(ctx, "k")
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
		if _, _, _, err := r.target(ctx, "k"); err == nil {
			t.Fatalf("call %d: a failed resolution succeeded", i)
		}
	}
	for range 2 {
		if _, key, _, err := r.target(ctx, "k"); err != nil || key != "tw:n:good:c:sessions:k" {
			t.Fatalf("%q %v", key, err)
		}
	}
	if calls != 4 {
		t.Fatalf("resolver called %d times, want 4 (three failures, then one success kept)", calls)
	}
}

// Many tenants spread over the slots (a hash that used only part of the
// id would put sequential ids in a few), and the cache never holds more
// than its slots: its size does not grow with the tenant count.
func TestNamespaceCacheSpreadsAndStaysBounded(t *testing.T) {
	var c nsCache
	if _, ok := c.get(tenancy.ID{}); ok {
		t.Fatal("an empty slot matched the zero tenant")
	}
	// Sequential ids differing in their last bytes, then in their first.
	for _, format := range []string{"00000000-0000-4000-9000-%012x", "%08x-0000-4000-9000-000000000000"} {
		used := map[int]bool{}
		for i := range 10000 {
			id := tenancy.MustParseID(fmt.Sprintf(format, i+1))
			c.put(id, "ns"+id.Hex())
			used[nsSlotOf(id)] = true
		}
		// 10,000 random ids would leave about e^-9.8 of 1,024 slots empty.
		if len(used) < nsSlots*99/100 {
			t.Fatalf("10,000 tenants %s used %d of %d slots", format, len(used), nsSlots)
		}
	}
	held := 0
	for i := range c.slots {
		if c.slots[i].ns != "" {
			held++
		}
	}
	if held > nsSlots {
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
	ids := collidingTenants(t, 2)
	ctxs := []context.Context{tenancy.WithTenant(context.Background(), ids[0]), tenancy.WithTenant(context.Background(), ids[1])}
	i := 0
	for _, c := range []struct {
		name string
		f    func()
		want float64
	}{
		{"tagged", func() { _, _, _, _ = tagged.target(ctx, "user:42") }, 1},
		{"namespace cached", func() { _, _, _, _ = ns.target(ctx, "user:42") }, 1},
		{"namespace evicted", func() { i++; _, _, _, _ = ns.target(ctxs[i%2], "user:42") }, 2},
	} {
		if n := testing.AllocsPerRun(200, c.f); n != c.want {
			t.Errorf("%s: %v allocations per call, want %v", c.name, n, c.want)
		}
	}
}
