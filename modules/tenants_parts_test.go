package modules_test

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestPartsFollowTheRunOrder: Parts names each module's part in the order
// Provision and Offboard run them, and a module without a teardown is the
// one Offboard skips, with the reason a dry run repeats; nothing runs.
func TestPartsFollowTheRunOrder(t *testing.T) {
	type coreA struct{}
	type coreB struct{}
	var ran []string
	step := func(what string) func(context.Context, tenancy.ID) error {
		return func(context.Context, tenancy.ID) error { ran = append(ran, what); return nil }
	}
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		fx.Provide(func() coreA { return coreA{} }, func() coreB { return coreB{} }),
		modules.ProvideTenantState(func(coreB) modules.TenantState {
			return modules.TenantState{Module: "zeta", Backend: "kv", Provision: step("zeta provision")}
		}),
		modules.ProvideTenantState(func(coreA) modules.TenantState {
			return modules.TenantState{Module: "alpha", Backend: "sql", Provision: step("alpha provision"), Offboard: step("alpha offboard")}
		}),
		fx.Populate(&tenants))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	parts := tenants.Parts()
	if got := fmt.Sprint(parts); got != "[{alpha sql true true} {zeta kv true false}]" || len(ran) != 0 {
		t.Fatalf("parts %s, ran %v", got, ran)
	}
	id := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	prov, err := tenants.Provision(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	off, err := tenants.Offboard(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		if prov[i].Module != p.Module || off[i].Module != p.Module || (off[i].Skipped == "") != p.Offboards {
			t.Errorf("part %d %+v; provision %+v, offboard %+v", i, p, prov[i], off[i])
		}
	}
	if off[1].Skipped != modules.SkippedNoTeardown {
		t.Errorf("skip reason %q, want SkippedNoTeardown", off[1].Skipped)
	}
}
