package modules_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// erasingTenants is an app of a module "kv" whose teardown removes
// nothing of what plant holds, its verifier reporting it, and a module
// "none" that holds nothing (no Verify).
func erasingTenants(t *testing.T, plant map[tenancy.ID]bool) *modules.Tenants {
	t.Helper()
	type coreA struct{}
	type coreB struct{}
	fam := modules.Family{Name: "entries", Kind: migrate.KindKeys, Where: "kv:*", Route: "items"}
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		fx.Provide(func() coreA { return coreA{} }, func() coreB { return coreB{} }),
		modules.ProvideTenantState(func(coreA) modules.TenantState {
			return modules.TenantState{Module: "kv", Backend: "kv",
				Offboard: func(context.Context, tenancy.ID) error { return nil },
				Verify: func(_ context.Context, id tenancy.ID) (modules.Erasure, error) {
					var e modules.Erasure
					n := int64(0)
					if plant[id] {
						n = 1
					}
					e.Check(fam, n, "kv:"+id.Hex())
					return e, nil
				}}
		}),
		modules.ProvideTenantState(func(coreB) modules.TenantState {
			return modules.TenantState{Module: "none", Backend: "kv",
				Offboard: func(context.Context, tenancy.ID) error { return nil }}
		}),
		fx.Populate(&tenants))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return tenants
}

// Offboard ends with every module's verifier: a clean tenant's report
// says what was checked; a tenant with data left fails with
// tenant_erasure_incomplete naming the module, route and family, and
// stays suspended.
func TestOffboardVerifiesErasure(t *testing.T) {
	clean, dirty := tenancy.MustParseID("7d1e8c2a-4b3f-4a9e-9c1d-2f6b8e0a1c01"), tenancy.MustParseID("7d1e8c2a-4b3f-4a9e-9c1d-2f6b8e0a1c02")
	tenants := erasingTenants(t, map[tenancy.ID]bool{dirty: true})
	ctx := context.Background()

	rep, err := tenants.Offboard(ctx, clean)
	if err != nil {
		t.Fatalf("clean offboard: %v", err)
	}
	if len(rep) != 2 || rep[0].Module != "kv" || len(rep[0].Checked) != 1 || len(rep[0].Left) != 0 {
		t.Fatalf("clean report: %+v", rep)
	}
	if len(rep[1].Checked) != 0 || rep[1].Err != nil {
		t.Fatalf("module without a verifier: %+v", rep[1])
	}

	rep, err = tenants.Offboard(ctx, dirty)
	if tenancy.CodeOf(err) != tenancy.CodeTenantErasureIncomplete {
		t.Fatalf("dirty offboard: %v", err)
	}
	for _, want := range []string{"entries", "kv:*", "route items", dirty.String()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q: %v", want, err)
		}
	}
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Module != "kv" || te.Route != "items" || te.Fix == "" {
		t.Fatalf("error fields: %+v", te)
	}
	if len(rep[0].Left) != 1 || rep[0].Left[0].Sample != "kv:"+dirty.Hex() {
		t.Fatalf("dirty report: %+v", rep[0])
	}
	if !tenants.Suspended(dirty) {
		t.Fatal("a tenant whose erasure is incomplete must stay suspended")
	}
}

// VerifyErasure runs the verifiers alone, removing nothing: a module
// without one is skipped with its reason.
func TestVerifyErasureAlone(t *testing.T) {
	clean, dirty := tenancy.MustParseID("7d1e8c2a-4b3f-4a9e-9c1d-2f6b8e0a1c03"), tenancy.MustParseID("7d1e8c2a-4b3f-4a9e-9c1d-2f6b8e0a1c04")
	tenants := erasingTenants(t, map[tenancy.ID]bool{dirty: true})
	rep, err := tenants.VerifyErasure(context.Background(), clean)
	if err != nil || len(rep) != 2 || len(rep[0].Checked) != 1 || rep[1].Skipped != modules.SkippedNothingToVerify {
		t.Fatalf("clean: %+v %v", rep, err)
	}
	if _, err := tenants.VerifyErasure(context.Background(), dirty); tenancy.CodeOf(err) != tenancy.CodeTenantErasureIncomplete {
		t.Fatalf("dirty: %v", err)
	}
	if tenants.Suspended(dirty) {
		t.Fatal("VerifyErasure suspends nobody")
	}
	if _, err := tenants.VerifyErasure(context.Background(), tenancy.ID{}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("zero tenant: %v", err)
	}
}
