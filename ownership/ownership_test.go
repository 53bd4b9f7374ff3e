package ownership_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/tenantwire/tenantwire/ownership"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type table struct {
	mu    sync.Mutex
	owner map[string]tenancy.ID
	calls int
	err   error
}

func (tb *table) lookup(_ context.Context, tenant tenancy.ID, id string) (bool, error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.calls++
	if tb.err != nil {
		return false, tb.err
	}
	return tb.owner[id] == tenant, nil
}

var (
	ctxA = tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxB = tenancy.WithTenant(context.Background(), tenancytest.TenantB)
)

func TestGate(t *testing.T) {
	tb := &table{owner: map[string]tenancy.ID{"m1": tenancytest.TenantA}}
	g := ownership.New(ownership.Config{Lookup: tb.lookup, MaxEntries: 2})
	if err := g.Check(ctxA, "m1"); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(ctxB, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("B checked A's id: %v", err)
	}
	calls := tb.calls
	if err := g.Check(ctxA, "m1"); err != nil || tb.calls != calls {
		t.Errorf("positive not cached: %v, %d lookups", err, tb.calls-calls)
	}
	// Negatives are never cached: the id can become B's own later.
	tb.owner["m2"] = tenancytest.TenantB
	if err := g.Check(ctxB, "m2"); err != nil {
		t.Errorf("fresh positive after a negative: %v", err)
	}
	// Cache keyed by (tenant, id): A's cached positive says nothing to B.
	if err := g.Check(ctxB, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("cache leaked across tenants: %v", err)
	}
	// Bounded, cleared wholesale on overflow.
	tb.owner["m3"] = tenancytest.TenantA
	if err := g.Check(ctxA, "m3"); err != nil || g.Len() > 2 {
		t.Errorf("overflow: %v, %d entries", err, g.Len())
	}
}

func TestGateFailsClosed(t *testing.T) {
	boom := errors.New("pool exhausted")
	tb := &table{owner: map[string]tenancy.ID{"m1": tenancytest.TenantA}, err: boom}
	g := ownership.New(ownership.Config{Lookup: tb.lookup})
	err := g.Check(ctxA, "m1")
	if !errors.Is(err, ownership.ErrNotOwned) || !errors.Is(err, boom) {
		t.Errorf("lookup error: %v", err)
	}
	if err := g.Check(context.Background(), "m1"); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Errorf("unbound: %v", err)
	}
	if err := ownership.New(ownership.Config{}).Check(ctxA, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("no lookup: %v", err)
	}
	if err := ownership.New(ownership.Config{TenancyOff: true}).Check(context.Background(), "m1"); err != nil {
		t.Errorf("tenancy off: %v", err)
	}
}

// TestGateHitAllocs: an ownership-gate cache hit does not allocate.
func TestGateHitAllocs(t *testing.T) {
	tb := &table{owner: map[string]tenancy.ID{"m1": tenancytest.TenantA}}
	g := ownership.New(ownership.Config{Lookup: tb.lookup})
	if err := g.Check(ctxA, "m1"); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { _ = g.Check(ctxA, "m1") }); n != 0 {
		t.Errorf("cache hit allocates %v times", n)
	}
}

// BenchmarkGateHit measures an ownership-gate cache hit, for make bench.
func BenchmarkGateHit(b *testing.B) {
	tb := &table{owner: map[string]tenancy.ID{"m1": tenancytest.TenantA}}
	g := ownership.New(ownership.Config{Lookup: tb.lookup})
	if err := g.Check(ctxA, "m1"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Check(ctxA, "m1"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGateNeverCachesNegatives: a denial is looked up again every time, so
// an id that becomes the tenant's own is allowed at once.
func TestGateNeverCachesNegatives(t *testing.T) {
	tb := &table{owner: map[string]tenancy.ID{}}
	g := ownership.New(ownership.Config{Lookup: tb.lookup})
	for range 2 {
		if err := g.Check(ctxB, "m2"); !errors.Is(err, ownership.ErrNotOwned) {
			t.Fatalf("unowned id allowed: %v", err)
		}
	}
	if tb.calls != 2 || g.Len() != 0 {
		t.Errorf("a denial was cached: %d lookups for 2 checks, %d entries", tb.calls, g.Len())
	}
	tb.owner["m2"] = tenancytest.TenantB
	if err := g.Check(ctxB, "m2"); err != nil {
		t.Errorf("denied, then owned: %v", err)
	}
}

// TestGateForget: a cached positive outlives a change of owner until the
// gate is told; after Forget the old owner is denied and the new one
// allowed. ForgetTenant drops a tenant's positives only.
func TestGateForget(t *testing.T) {
	tb := &table{owner: map[string]tenancy.ID{"m1": tenancytest.TenantA, "m3": tenancytest.TenantA, "m4": tenancytest.TenantB}}
	g := ownership.New(ownership.Config{Lookup: tb.lookup})
	for _, c := range []struct {
		ctx context.Context
		id  string
	}{{ctxA, "m1"}, {ctxA, "m3"}, {ctxB, "m4"}} {
		if err := g.Check(c.ctx, c.id); err != nil {
			t.Fatal(err)
		}
	}
	// m1 deleted by A, re-created by B.
	tb.mu.Lock()
	tb.owner["m1"] = tenancytest.TenantB
	tb.mu.Unlock()
	g.Forget(tenancytest.TenantA, "m1")
	if err := g.Check(ctxA, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("old owner allowed after Forget: %v", err)
	}
	if err := g.Check(ctxB, "m1"); err != nil {
		t.Errorf("new owner denied: %v", err)
	}
	tb.mu.Lock()
	delete(tb.owner, "m3")
	tb.mu.Unlock()
	g.ForgetTenant(tenancytest.TenantA)
	if err := g.Check(ctxA, "m3"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("torn-down tenant allowed: %v", err)
	}
	calls := tb.calls
	if err := g.Check(ctxB, "m4"); err != nil || tb.calls != calls {
		t.Errorf("ForgetTenant(A) dropped B's positive: %v, %d lookups", err, tb.calls-calls)
	}
}

// TestGateForgetRacesLookup: a lookup that read the owner before a Forget
// does not cache what it read.
func TestGateForgetRacesLookup(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var calls int
	var mu sync.Mutex
	g := ownership.New(ownership.Config{Lookup: func(_ context.Context, tenant tenancy.ID, id string) (bool, error) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			close(started)
			<-release // the owner is read here, then deleted and forgotten
		}
		return tenant == tenancytest.TenantA && first, nil
	}})
	done := make(chan error)
	go func() { done <- g.Check(ctxA, "m1") }()
	<-started
	g.Forget(tenancytest.TenantA, "m1")
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the in-flight check read an owner: %v", err)
	}
	if err := g.Check(ctxA, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("a lookup that raced Forget was cached: %v", err)
	}
}

// TestGateSuspend: Suspend drops the cache and caches nothing until
// Resume; a lookup that began while suspended is not cached after Resume.
func TestGateSuspend(t *testing.T) {
	tb := &table{owner: map[string]tenancy.ID{"m1": tenancytest.TenantA}}
	g := ownership.New(ownership.Config{Lookup: tb.lookup})
	cacheAll(t, g, "m1")
	g.Suspend()
	if g.Len() != 0 {
		t.Fatalf("%d positives kept by Suspend", g.Len())
	}
	calls := tb.calls
	cacheAll(t, g, "m1", "m1")
	if tb.calls-calls != 2 || g.Len() != 0 {
		t.Errorf("suspended: %d lookups for two checks, %d cached; want 2 and 0", tb.calls-calls, g.Len())
	}
	g.Resume()
	cacheAll(t, g, "m1")
	calls = tb.calls
	cacheAll(t, g, "m1")
	if tb.calls != calls {
		t.Error("resumed: a positive is not cached again")
	}

	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	slow := ownership.New(ownership.Config{Lookup: func(_ context.Context, tenant tenancy.ID, _ string) (bool, error) {
		once.Do(func() { close(started); <-release })
		return tenant == tenancytest.TenantA, nil
	}})
	slow.Suspend()
	done := make(chan error)
	go func() { done <- slow.Check(ctxA, "m1") }()
	<-started
	slow.Resume()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if slow.Len() != 0 {
		t.Error("a lookup begun while suspended was cached after Resume")
	}
}
