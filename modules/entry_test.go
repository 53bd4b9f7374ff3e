package modules_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestEntryOrder: an Entry runs its steps in the documented order and
// undoes them in reverse: an unbound call reaches nothing, a suspended
// one reaches nothing, a failed reach and a refused version leave nothing
// in flight (a drain passes) and the refused version releases what was
// reached; an admitted call is in flight until done, which releases.
func TestEntryOrder(t *testing.T) {
	rules := floors.Backend{Name: "toy", Ceiling: tenancy.Namespace, Kinds: map[floors.Kind]floors.KindRule{"kv": {Relations: []string{"keys"}}}}
	r := floors.Route{Name: "r", Kind: "kv", TenantAware: true, Relations: []floors.Relation{{Role: "keys", Name: "k"}}}
	susp := &modules.Suspensions{}
	var steps []string
	reachErr, behind := error(nil), error(nil)
	reach := func(_ context.Context, id tenancy.ID) (string, func(), error) {
		steps = append(steps, "reach")
		if reachErr != nil {
			return "", nil, reachErr
		}
		return id.Hex(), func() { steps = append(steps, "release") }, nil
	}
	current := func(_ context.Context, _ tenancy.ID, got string) error {
		steps = append(steps, "current "+got[:2])
		return behind
	}
	e := modules.NewEntry(modules.GateOf(modules.GateSpec{Rules: rules, Module: "m", Route: "r", Decision: rules.Decide(r), Suspensions: susp}), reach, current)
	a := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	drained := func(want bool) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		if !want {
			cancel()
		}
		err := susp.Drain(ctx, tenancytest.TenantA)
		cancel()
		if (err == nil) != want {
			t.Fatalf("drain: %v, want drained=%v", err, want)
		}
	}
	_, _, _, _, err := e.Enter(context.Background())
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantUnbound, "toy", "m", "r")
	susp.Suspend(tenancytest.TenantA)
	_, _, _, _, err = e.Enter(a)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantSuspended, "toy", "m", "r")
	if len(steps) != 0 {
		t.Fatalf("a refused tenant reached %v", steps)
	}
	susp.Resume(tenancytest.TenantA)
	reachErr = errors.New("no pool")
	if _, _, _, _, err = e.Enter(a); !errors.Is(err, reachErr) {
		t.Fatalf("reach error: %v", err)
	}
	drained(true)
	reachErr, behind = nil, errors.New("behind")
	if _, _, _, _, err = e.Enter(a); !errors.Is(err, behind) {
		t.Fatalf("version refusal: %v", err)
	}
	drained(true)
	behind = nil
	_, id, got, done, err := e.Enter(a)
	if err != nil || id != tenancytest.TenantA || got != tenancytest.TenantA.Hex() {
		t.Fatalf("admitted: %v %v %v", id, got, err)
	}
	drained(false)
	done()
	drained(true)
	want := []string{"reach", "reach", "current " + tenancytest.TenantA.Hex()[:2], "release", "reach", "current " + tenancytest.TenantA.Hex()[:2], "release"}
	if len(steps) != len(want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Fatalf("steps %v, want %v", steps, want)
		}
	}
}

// TestEntryAllocatesNothing: without telemetry, an entry whose reach
// releases nothing costs no allocation per call.
func TestEntryAllocatesNothing(t *testing.T) {
	rules := floors.Backend{Name: "toy", Ceiling: tenancy.Namespace, Kinds: map[floors.Kind]floors.KindRule{"kv": {Relations: []string{"keys"}}}}
	r := floors.Route{Name: "r", Kind: "kv", TenantAware: true, Relations: []floors.Relation{{Role: "keys", Name: "k"}}}
	e := modules.NewEntry(modules.GateOf(modules.GateSpec{Rules: rules, Module: "m", Route: "r", Decision: rules.Decide(r), Suspensions: &modules.Suspensions{}}),
		func(context.Context, tenancy.ID) (int, func(), error) { return 1, nil, nil }, nil)
	a := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if n := testing.AllocsPerRun(200, func() {
		_, _, _, done, err := e.Enter(a)
		if err != nil {
			t.Fatal(err)
		}
		done()
	}); n != 0 {
		t.Fatalf("%v allocations per call, want 0", n)
	}
}

// TestEntryTenantOptional: on a route that needs no tenant, an optional
// entry runs an unbound call for none and a bound one for its tenant,
// refused when suspended and held in flight until Held.End.
func TestEntryTenantOptional(t *testing.T) {
	rules := floors.Backend{Name: "toy", Ceiling: tenancy.Namespace, Kinds: map[floors.Kind]floors.KindRule{"kv": {Relations: []string{"keys"}}}}
	r := floors.Route{Name: "r", Kind: "kv", Relations: []floors.Relation{{Role: "keys", Name: "k"}}}
	susp := &modules.Suspensions{}
	d := rules.Decide(r)
	if d.NeedsTenant {
		t.Fatal("the route needs a tenant")
	}
	e := modules.NewEntry[int](modules.GateOf(modules.GateSpec{Rules: rules, Module: "m", Route: "r", Decision: d, Suspensions: susp, TenantOptional: true}), nil, nil)
	_, id, _, held, err := e.Open(context.Background())
	if err != nil || !id.IsZero() {
		t.Fatalf("unbound: %v %v", id, err)
	}
	held.End(nil)
	a := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	_, id, _, held, err = e.Open(a)
	if err != nil || id != tenancytest.TenantA {
		t.Fatalf("bound: %v %v", id, err)
	}
	susp.Suspend(tenancytest.TenantA)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := susp.Drain(ctx, tenancytest.TenantA); err == nil {
		t.Fatal("the drain passed while the call was in flight")
	}
	held.End(errors.New("failed"))
	if err := susp.Drain(context.Background(), tenancytest.TenantA); err != nil {
		t.Fatalf("drain after End: %v", err)
	}
	_, _, _, _, err = e.Open(a)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantSuspended, "toy", "m", "r")
}
