package modules_test

import (
	"context"
	"slices"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestTenantsRunAtThePlacement: a module's placements each take part in
// a tenant's life only for the tenants placed there: Provision and
// Offboard run at the tenant's placement and skip the others (their lines
// say so); a tenant whose record the module cannot honour, or whose plan
// its placement is under, is not provisioned anywhere.
func TestTenantsRunAtThePlacement(t *testing.T) {
	offer := modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}
	type step struct {
		at     tenancy.Tier
		what   string
		tenant tenancy.ID
	}
	var ran []step
	type core struct{}
	opts := []fx.Option{fx.NopLogger, modules.Lifecycle(), fx.Provide(func() core { return core{} })}
	for _, at := range offer.Tiers {
		opts = append(opts, modules.ProvideTenantState(func(core) modules.TenantState {
			return modules.TenantState{Module: "m@" + at.String(), Backend: "kv", Placement: &modules.Placement{Module: "m", At: at, Offer: offer},
				Provision: func(_ context.Context, id tenancy.ID) error { ran = append(ran, step{at, "provision", id}); return nil },
				Offboard:  func(_ context.Context, id tenancy.ID) error { ran = append(ran, step{at, "offboard", id}); return nil }}
		}))
	}
	var tenants *modules.Tenants
	app := fx.New(append(opts, fx.Populate(&tenants))...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, b, c := tenancytest.TenantA, tenancytest.TenantB, tenancytest.TenantC
	tenants.Place(b, "m", tenancy.Namespace)
	tenants.Place(c, "m", tenancy.Dedicated)
	tenants.SetPlan(c, tenancy.Dedicated)
	for _, id := range []tenancy.ID{a, b, c} {
		rep, err := tenants.Provision(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		skipped := 0
		for _, l := range rep {
			if l.Skipped != "" {
				skipped++
			}
		}
		if skipped != 2 {
			t.Fatalf("provisioning %s: %d lines skipped, want the 2 other placements: %+v", id, skipped, rep)
		}
	}
	want := []step{{tenancy.Tagged, "provision", a}, {tenancy.Namespace, "provision", b}, {tenancy.Dedicated, "provision", c}}
	if !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}

	ran = nil
	tenants.SetPlan(a, tenancy.Namespace) // A is at the default, tagged
	_, err := tenants.Provision(ctx, a)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantPlacementUnderFloor, "kv", "m", "")
	tenants.Place(b, "m", tenancy.None)
	_, err = tenants.Provision(ctx, b)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantPlacementInvalid, "kv", "m", "")
	if len(ran) != 0 {
		t.Fatalf("a refused placement provisioned %v", ran)
	}

	// An under-floor tenant's data is still removed where it is.
	if _, err := tenants.Offboard(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := tenants.Offboard(ctx, c); err != nil {
		t.Fatal(err)
	}
	want = []step{{tenancy.Tagged, "offboard", a}, {tenancy.Dedicated, "offboard", c}}
	if !slices.Equal(ran, want) {
		t.Fatalf("offboards ran %v, want %v", ran, want)
	}
}
