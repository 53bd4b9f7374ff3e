package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestCleanupMoveKeepsTheNewCopy: after a move between every pair of
// placements, removing the old copy leaves the tenant's records where it
// now is, all of them, and its counter too.
func TestCleanupMoveKeepsTheNewCopy(t *testing.T) {
	p := newPlacedApp(t)
	a := tenancytest.TenantA
	ctxA := tenancy.WithTenant(context.Background(), a)
	for i := range 5 {
		if _, err := p.docs.Create(ctxA, fmt.Sprint("r", i), item{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.hits.Add(ctxA, "h", 3); err != nil {
		t.Fatal(err)
	}
	at := tenancy.Tagged
	for _, to := range []tenancy.Tier{tenancy.Namespace, tenancy.Dedicated, tenancy.Tagged, tenancy.Dedicated, tenancy.Namespace, tenancy.Tagged} {
		if _, err := p.tenants.Move(context.Background(), a, "orders", to, modules.MoveOptions{}); err != nil {
			t.Fatalf("moving %s → %s: %v", at, to, err)
		}
		if _, err := p.tenants.CleanupMove(context.Background(), a, "orders", at); err != nil {
			t.Fatalf("cleaning up %s after the move to %s: %v", at, to, err)
		}
		if n, err := p.docs.Count(ctxA, document.Query{}); err != nil || n != 5 {
			t.Fatalf("after %s → %s and the cleanup of %s, A holds %d records (%v), want 5", at, to, at, n, err)
		}
		if v, err := p.hits.Get(ctxA, "h"); err != nil || v != 3 {
			t.Fatalf("after %s → %s and the cleanup of %s, A's counter is %d (%v), want 3", at, to, at, v, err)
		}
		at = to
	}
}
