package modules_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestPlacer: a module offering placements serves each tenant from the
// route of its recorded placement (or the default's), and fails closed,
// reaching nothing, on a record naming a tier it does not offer or one
// under the tenant's plan; a suspended tenant is refused by its route's
// entry (tenant_suspended), whatever its record says.
func TestPlacer(t *testing.T) {
	rules := floors.Backend{Name: "toy", Ceiling: tenancy.Dedicated, Kinds: map[floors.Kind]floors.KindRule{"kv": {Relations: []string{"keys"}}}}
	r := floors.Route{Name: "r", Kind: "kv", TenantAware: true, Relations: []floors.Relation{{Role: "keys", Name: "k"}}}
	susp := &modules.Suspensions{}
	offer := modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged}
	placer := modules.NewPlacer("toy", "m", offer, susp)
	routes := map[tenancy.Tier]*modules.Entry[string]{}
	var reached []tenancy.Tier
	for _, at := range offer.Tiers {
		reach := func(context.Context, tenancy.ID) (string, func(), error) {
			reached = append(reached, at)
			return "", nil, nil
		}
		routes[at] = modules.NewEntry(modules.GateOf(modules.GateSpec{Rules: rules, Module: "m@" + at.String(), Route: "r", Decision: rules.Decide(r), Suspensions: susp}), reach, nil)
	}
	call := func(tenant tenancy.ID) (tenancy.Tier, error) {
		ctx := tenancy.WithTenant(context.Background(), tenant)
		at, end, err := placer.At(ctx, "r", false)
		if err != nil {
			return at, err
		}
		end()
		n := len(reached)
		_, _, _, done, err := routes[at].Enter(ctx)
		if err == nil {
			done()
			if len(reached) != n+1 || reached[n] != at {
				t.Fatalf("placed at %v, reached %v", at, reached)
			}
		}
		return at, err
	}
	a, b := tenancytest.TenantA, tenancytest.TenantB

	if at, err := call(a); err != nil || at != tenancy.Tagged {
		t.Fatalf("no record: %v at %v, want the default (tagged)", err, at)
	}
	susp.Place(b, "m", tenancy.Namespace)
	if at, err := call(b); err != nil || at != tenancy.Namespace {
		t.Fatalf("placed at namespace: %v at %v", err, at)
	}
	if at, _ := call(a); at != tenancy.Tagged {
		t.Fatalf("B's record moved A to %v", at)
	}
	// Another module's record does not place the tenant here.
	susp.Place(a, "other", tenancy.Namespace)
	if at, _ := call(a); at != tenancy.Tagged {
		t.Fatalf("another module's record placed A at %v", at)
	}

	reached = nil
	susp.SetPlan(a, tenancy.Namespace)
	_, err := call(a)
	e2 := tenancytest.RequireCode(t, err, tenancy.CodeTenantPlacementUnderFloor, "toy", "m", "r")
	if e2.Reached != tenancy.Tagged || e2.Required != tenancy.Namespace || e2.Fix == "" {
		t.Fatalf("under-floor refusal carries reached %v required %v fix %q", e2.Reached, e2.Required, e2.Fix)
	}
	susp.Place(a, "m", tenancy.Dedicated)
	_, err = call(a)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantPlacementInvalid, "toy", "m", "r")
	if len(reached) != 0 {
		t.Fatalf("a refused placement reached %v", reached)
	}
	susp.Place(a, "m", tenancy.Namespace)
	if at, err := call(a); err != nil || at != tenancy.Namespace {
		t.Fatalf("placed at its plan: %v at %v", err, at)
	}

	susp.Suspend(b)
	reached = nil
	_, err = call(b)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantSuspended, "toy", "m@namespace", "r")
	if len(reached) != 0 {
		t.Fatalf("a suspended tenant reached %v", reached)
	}
}

// TestOfferProblems: a malformed offer is named before any call.
func TestOfferProblems(t *testing.T) {
	T := tenancy.Tagged
	N, D := tenancy.Namespace, tenancy.Dedicated
	for name, c := range map[string]struct {
		o  modules.Offer
		ok bool
	}{
		"two":          {modules.Offer{Tiers: []tenancy.Tier{T, D}, Default: T}, true},
		"three":        {modules.Offer{Tiers: []tenancy.Tier{T, N, D}, Default: N}, true},
		"one":          {modules.Offer{Tiers: []tenancy.Tier{N}, Default: N}, false},
		"default out":  {modules.Offer{Tiers: []tenancy.Tier{T, N}, Default: D}, false},
		"none tier":    {modules.Offer{Tiers: []tenancy.Tier{tenancy.None, N}, Default: N}, false},
		"twice":        {modules.Offer{Tiers: []tenancy.Tier{N, N}, Default: N}, false},
		"invalid tier": {modules.Offer{Tiers: []tenancy.Tier{N, tenancy.Tier(9)}, Default: N}, false},
	} {
		if got := c.o.Problem() == ""; got != c.ok {
			t.Errorf("%s: problem %q, want ok=%v", name, c.o.Problem(), c.ok)
		}
	}
	if w := (modules.Offer{Tiers: []tenancy.Tier{D, T, N}}).Weakest(); w != T {
		t.Fatalf("weakest of dedicated, tagged, namespace: %v", w)
	}
}

// BenchmarkPlacerAt is the placement lookup a placed route adds to each
// call (P13's whole difference), among 10,000 placed tenants: a read, and
// a write held in flight against the move's fence.
func BenchmarkPlacerAt(b *testing.B) {
	s := &modules.Suspensions{}
	for i := range 10000 {
		s.Place(tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-b000-%012x", i+1)), "orders", tenancy.Namespace)
	}
	s.Place(tenancytest.TenantA, "orders", tenancy.Namespace)
	p := modules.NewPlacer("pg", "orders", modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged}, s)
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	for _, write := range []bool{false, true} {
		name := map[bool]string{false: "read", true: "write"}[write]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				at, end, err := p.At(ctx, "docs", write)
				if err != nil || at != tenancy.Namespace {
					b.Fatal(at, err)
				}
				end()
			}
		})
	}
}
