package modules

import (
	"context"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestServeAtFollowsThePlacement: a placement's worker serves only the
// tenants placed at it; a placement elsewhere, a move's fence and a store
// read that moves the tenant each stop it; a move waits for it and not
// for another module's worker of the same tenant.
func TestServeAtFollowsThePlacement(t *testing.T) {
	s := &Suspensions{}
	a := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-0000000000aa")
	offer := Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged}
	tagged := s.ServeAt(Placement{Module: "orders", At: tenancy.Tagged, Offer: offer})
	namespace := s.ServeAt(Placement{Module: "orders", At: tenancy.Namespace, Offer: offer})

	if _, _, err := namespace.Serve(a, "", "w", "w"); tenancy.CodeOf(err) != tenancy.CodeTenantPlacementInvalid {
		t.Fatalf("the namespace worker served a tenant placed at the default (tagged): %v", err)
	}
	stop, end, err := tagged.Serve(a, "", "w", "w")
	if err != nil {
		t.Fatalf("the tagged worker refused its own tenant: %v", err)
	}
	other, otherEnd, err := s.Serve(a, "", "audit", "audit") // another module's worker
	if err != nil {
		t.Fatal(err)
	}
	defer otherEnd()

	s.setFence("orders", a, true)
	if !closed(stop) {
		t.Fatal("a move's fence did not stop the worker of the tenant's placement")
	}
	if closed(other) {
		t.Fatal("a move in one module stopped another module's worker")
	}
	if _, _, err := tagged.Serve(a, "", "w", "w"); tenancy.CodeOf(err) != tenancy.CodeTenantMoving {
		t.Fatalf("a fenced tenant got a worker: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.drainMove(context.Background(), a, "orders") }()
	select {
	case err := <-waited:
		t.Fatalf("the move's drain ended with the placement's worker still running: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	end()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("the move's drain: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the move's drain waited for another module's worker")
	}

	s.Place(a, "orders", tenancy.Namespace)
	s.setFence("orders", a, false)
	stop, end, err = namespace.Serve(a, "", "w", "w")
	if err != nil {
		t.Fatalf("the new placement's worker refused the moved tenant: %v", err)
	}
	if _, _, err := tagged.Serve(a, "", "w", "w"); err == nil {
		t.Fatal("the old placement's worker served the moved tenant")
	}
	// Another replica's move, read from the store, stops it too.
	s.followPlaced([]Placed{{Tenant: a, At: map[string]tenancy.Tier{"orders": tenancy.Tagged}}})
	if !closed(stop) {
		t.Fatal("a store read placing the tenant elsewhere did not stop the worker")
	}
	end()
	if _, _, err := namespace.Serve(a, "", "w", "w"); err == nil {
		t.Fatal("a worker served a tenant the store places elsewhere")
	}
	s.Suspend(a)
	if _, _, err := tagged.Serve(a, "", "w", "w"); tenancy.CodeOf(err) != tenancy.CodeTenantSuspended {
		t.Fatalf("a suspended tenant: %v", err)
	}
}

// TestServeAtWithoutLifecycle: with no suspensions every tenant is at the
// offer's default, so only the default placement's worker serves it.
func TestServeAtWithoutLifecycle(t *testing.T) {
	var s *Suspensions
	a := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-0000000000aa")
	offer := Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Namespace}
	if _, end, err := s.ServeAt(Placement{Module: "orders", At: tenancy.Namespace, Offer: offer}).Serve(a, "", "w", "w"); err != nil || end == nil {
		t.Fatalf("the default placement's worker: %v", err)
	}
	if _, _, err := s.ServeAt(Placement{Module: "orders", At: tenancy.Tagged, Offer: offer}).Serve(a, "", "w", "w"); tenancy.CodeOf(err) != tenancy.CodeTenantPlacementInvalid {
		t.Fatalf("another placement's worker served a tenant at the default: %v", err)
	}
}
