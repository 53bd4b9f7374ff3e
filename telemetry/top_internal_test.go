package telemetry

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

func topTenantIDs(n int) []tenancy.ID {
	ids := make([]tenancy.ID, n)
	for i := range ids {
		var b [16]byte
		b[0], b[1], b[2], b[3] = 7, byte(i>>16), byte(i>>8), byte(i)
		ids[i], _ = tenancy.IDFromBytes(b)
	}
	return ids
}

// On a Zipf workload of 10,000 tenants the sketch's top 10 is the true
// top 10, in order; every estimate is within its stated bound (true count
// in [Calls-Over, Calls], Over at most calls/Size); every tenant with
// more than calls/Size of them is kept.
func TestTopSketchFindsTheHeavyHittersOfAZipfWorkload(t *testing.T) {
	const tenants, calls, size = 10000, 1000000, 64
	ids := topTenantIDs(tenants)
	z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, tenants-1)
	// Tenant ranks are shuffled, so the heavy ones are not the first ids.
	perm := rand.New(rand.NewPCG(3, 4)).Perm(tenants)
	s := newSketch(RouteInfo{Route: "r"}, TopConfig{Size: size, Window: time.Hour})
	truth := make(map[tenancy.ID]int64, tenants)
	now := time.Now()
	for range calls {
		id := ids[perm[z.Uint64()]]
		truth[id]++
		s.observe(id, time.Microsecond, false, now)
	}
	w := s.read(now).Current
	if w.Calls != calls || len(w.Tenants) != size {
		t.Fatalf("window: %d calls, %d tenants kept", w.Calls, len(w.Tenants))
	}
	type kv struct {
		id tenancy.ID
		n  int64
	}
	var all []kv
	for id, n := range truth {
		all = append(all, kv{id, n})
	}
	slices.SortFunc(all, func(a, b kv) int { return int(b.n - a.n) })
	for i := range 10 {
		if w.Tenants[i].Tenant != all[i].id {
			t.Errorf("rank %d: sketch has %v (%d calls, over %d), truth %v (%d calls)", i+1, w.Tenants[i].Tenant, w.Tenants[i].Calls, w.Tenants[i].Over, all[i].id, all[i].n)
		}
	}
	bound := int64(calls / size)
	kept := map[tenancy.ID]bool{}
	for _, tt := range w.Tenants {
		kept[tt.Tenant] = true
		if n := truth[tt.Tenant]; n > tt.Calls || tt.Calls-tt.Over > n || tt.Over > bound {
			t.Errorf("%v: estimate %d over %d, true %d, bound %d", tt.Tenant, tt.Calls, tt.Over, n, bound)
		}
	}
	for _, e := range all {
		if e.n > bound && !kept[e.id] {
			t.Errorf("%v has %d calls, more than calls/Size %d, and is not kept", e.id, e.n, bound)
		}
	}
}

// The sketch's memory is fixed: 100,000 distinct tenants leave Size
// places and an index of Size entries.
func TestTopSketchMemoryIsFixed(t *testing.T) {
	s := newSketch(RouteInfo{Route: "r"}, TopConfig{Size: 32, Window: time.Hour})
	now := time.Now()
	for _, id := range topTenantIDs(100000) {
		s.observe(id, time.Microsecond, true, now)
	}
	if len(s.slots) != 32 || len(s.index) != 32 || cap(s.slots) != 32 {
		t.Fatalf("%d places (cap %d), %d index entries after 100,000 tenants; want 32", len(s.slots), cap(s.slots), len(s.index))
	}
	for i, sl := range s.slots {
		if s.index[sl.Tenant] != i {
			t.Fatalf("index of %v is %d, its place %d", sl.Tenant, s.index[sl.Tenant], i)
		}
	}
}

// A window ends after Window: its counts become Previous, complete, and
// the next call starts a new one; a window with no call since its end
// reads as complete. The zero tenant is not counted. Time and errors add
// up per tenant.
func TestTopSketchWindows(t *testing.T) {
	ids := topTenantIDs(2)
	s := newSketch(RouteInfo{Backend: "b", Module: "m", Route: "r"}, TopConfig{Size: 4, Window: time.Minute})
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for range 3 {
		s.observe(ids[0], 2*time.Millisecond, false, t0)
	}
	s.observe(ids[0], time.Millisecond, true, t0)
	s.observe(ids[1], time.Millisecond, false, t0.Add(time.Second))
	s.observe(tenancy.ID{}, time.Millisecond, false, t0)
	r := s.read(t0.Add(2 * time.Second))
	if r.Current.Calls != 5 || len(r.Current.Tenants) != 2 || r.Previous.Calls != 0 {
		t.Fatalf("first window: %+v", r)
	}
	top := r.Current.Tenants[0]
	if top.Tenant != ids[0] || top.Calls != 4 || top.Errors != 1 || top.Time != 7*time.Millisecond || top.Over != 0 {
		t.Fatalf("top tenant: %+v", top)
	}
	if r = s.read(t0.Add(time.Minute)); r.Previous.Calls != 5 || r.Current.Calls != 0 {
		t.Fatalf("a window with no call since its end: %+v", r)
	}
	s.observe(ids[1], time.Millisecond, false, t0.Add(61*time.Second))
	r = s.read(t0.Add(62 * time.Second))
	if r.Previous.Calls != 5 || !r.Previous.Start.Equal(t0) || r.Current.Calls != 1 || r.Current.Tenants[0].Tenant != ids[1] {
		t.Fatalf("after the window: %+v", r)
	}
}

// Bad settings are refused with wiring_invalid.
func TestTopConfigRefused(t *testing.T) {
	for _, c := range []TopConfig{{Size: -1}, {Window: -time.Second}, {Export: -1}, {Size: 4, Export: 5}, {Export: 65}, {Label: TenantPolicy{mode: hashed}}} {
		if _, err := New(Config{Top: &c}); tenancy.CodeOf(err) != tenancy.CodeWiringInvalid {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if _, err := New(Config{Top: &TopConfig{Size: 4, Export: 4}}); err != nil {
		t.Fatal(err)
	}
}

// A route's calls reach its sketch through the call's end, with no
// tracer or meter configured; another route has its own, and the same
// route's instruments built again share it.
func TestTopTenantsOfRouteCalls(t *testing.T) {
	tel, err := New(Config{Top: &TopConfig{Size: 8}})
	if err != nil {
		t.Fatal(err)
	}
	ids := topTenantIDs(3)
	a := tel.Route(RouteInfo{Backend: "b", Module: "m", Route: "a"})
	b := tel.Route(RouteInfo{Backend: "b", Module: "m", Route: "b"})
	for i, id := range ids {
		for range i + 1 {
			_, c := a.Start(t.Context(), id)
			c.End(nil)
		}
	}
	_, c := b.Start(t.Context(), ids[0])
	c.End(tenancy.Unbound())
	// The same route's instruments built again share its sketch.
	again := tel.Route(RouteInfo{Backend: "b", Module: "m", Route: "a"})
	_, c = again.Start(t.Context(), ids[2])
	c.End(nil)
	top := tel.TopTenants()
	if len(top) != 2 || top[0].Route != "a" || top[0].Current.Calls != 7 || top[0].Current.Tenants[0].Tenant != ids[2] || top[0].Current.Tenants[0].Calls != 4 {
		t.Fatalf("route a: %+v", top)
	}
	if top[1].Current.Calls != 1 || top[1].Current.Tenants[0].Errors != 1 {
		t.Fatalf("route b: %+v", top[1])
	}
	if (*Telemetry)(nil).TopTenants() != nil {
		t.Fatal("a nil Telemetry has no view")
	}
	if off, _ := New(Config{}); off.TopTenants() != nil {
		t.Fatal("without Config.Top there is no view")
	}
}
