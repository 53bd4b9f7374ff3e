package mongo

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TestPlanProvisionRefusesTheZeroTenant: the zero tenant has nothing of
// its own to plan; it is refused before any request.
func TestPlanProvisionRefusesTheZeroTenant(t *testing.T) {
	p := &lifecycleTarget{core: &core{module: "m"}}
	if _, err := p.PlanProvision(context.Background(), tenancy.ID{}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("zero tenant: %v", err)
	}
}
