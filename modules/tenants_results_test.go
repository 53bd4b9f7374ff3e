package modules_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// failingTenants is an app of two stand-in modules: "a" provisions and
// offboards every tenant, "b" refuses bad at both and removes many
// tenants in one pass (OffboardMany), as Redis does.
func failingTenants(t *testing.T, bad tenancy.ID) *modules.Tenants {
	t.Helper()
	type coreA struct{}
	type coreB struct{}
	refuse := func(id tenancy.ID) error {
		if id == bad {
			return errors.New("refused " + id.String())
		}
		return nil
	}
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		fx.Provide(func() coreA { return coreA{} }, func() coreB { return coreB{} }),
		modules.ProvideTenantState(func(coreA) modules.TenantState {
			return modules.TenantState{Module: "a", Backend: "kv",
				Provision: func(context.Context, tenancy.ID) error { return nil },
				Offboard:  func(context.Context, tenancy.ID) error { return nil }}
		}),
		modules.ProvideTenantState(func(coreB) modules.TenantState {
			return modules.TenantState{Module: "b", Backend: "scan",
				Provision: func(_ context.Context, id tenancy.ID) error { return refuse(id) },
				Offboard:  func(_ context.Context, id tenancy.ID) error { return refuse(id) },
				OffboardMany: func(_ context.Context, ids []tenancy.ID) []error {
					errs := make([]error, len(ids))
					for i, id := range ids {
						errs[i] = refuse(id)
					}
					return errs
				}}
		}),
		fx.Populate(&tenants))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return tenants
}

// A suspended tenant whose provisioning failed in one module stays
// suspended: Provision resumes a tenant only once every module did its
// part, and its report names the module that failed.
func TestProvisionFailedKeepsSuspension(t *testing.T) {
	ctx := context.Background()
	ids := manyTenants(2)
	tenants := failingTenants(t, ids[0])
	tenants.SuspendAll(ids)
	rep, err := tenants.Provision(ctx, ids[0])
	if err == nil || len(rep) != 2 || rep[0].Err != nil || rep[1].Module != "b" || rep[1].Err == nil {
		t.Fatalf("report %+v, %v", rep, err)
	}
	if !tenants.Suspended(ids[0]) {
		t.Fatal("a tenant whose provisioning failed was resumed")
	}
	if _, err := tenants.Provision(ctx, ids[1]); err != nil || tenants.Suspended(ids[1]) {
		t.Fatalf("a tenant provisioned in every module: %v, suspended %v", err, tenants.Suspended(ids[1]))
	}
}

// With a zero id among real tenants, ProvisionAll and OffboardAll give
// each tenant its own result: the zero id is reported unbound, the
// module's failure against the tenant it failed for, and no other tenant
// fails. The zero id comes first, so a result taken by batch position
// rather than by tenant lands on the wrong one.
func TestAllZeroTenantResultsPerTenant(t *testing.T) {
	ctx := context.Background()
	ids := manyTenants(6)
	bad := ids[2]
	list := append([]tenancy.ID{{}}, ids[:3]...)
	list = append(list, tenancy.ID{})
	list = append(list, ids[3:]...)
	check := func(what string, rep migrate.Report) {
		t.Helper()
		if rep.Total != len(list) || rep.Done != len(ids)-1 || len(rep.Failures) != 3 {
			t.Fatalf("%s: report %+v", what, rep)
		}
		for _, f := range rep.Failures {
			switch {
			case f.Tenant.IsZero():
				if tenancy.CodeOf(f.Err) != tenancy.CodeTenantUnbound {
					t.Fatalf("%s: the zero id: %v", what, f.Err)
				}
			case f.Tenant == bad:
				if msg := fmt.Sprint(f.Err); !strings.Contains(msg, "b (scan): refused "+bad.String()) {
					t.Fatalf("%s: the refused tenant's failure: %v", what, f.Err)
				}
			default:
				t.Fatalf("%s: failure reported against %s: %v", what, f.Tenant, f.Err)
			}
		}
	}
	for _, conc := range []int{1, 3} {
		tenants := failingTenants(t, bad)
		check(fmt.Sprintf("provision, concurrency %d", conc), tenants.ProvisionAll(ctx, list, migrate.Options{Concurrency: conc}))
		check(fmt.Sprintf("offboard, concurrency %d", conc), tenants.OffboardAll(ctx, list, migrate.Options{Concurrency: conc}))
		for _, id := range ids {
			if !tenants.Suspended(id) {
				t.Fatalf("tenant %s served after OffboardAll", id)
			}
		}
	}
}
