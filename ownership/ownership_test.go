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

// TestGateHitAllocs is QUALITY P9's ownership-gate cache hit.
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

// BenchmarkGateHit is QUALITY P9's ownership-gate cache hit, for make bench.
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
