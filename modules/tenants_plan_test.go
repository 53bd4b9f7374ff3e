package modules_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestProvisionAllDryRunProvisionsNothing: Tenants.ProvisionAll with
// DryRun runs no module's Provision and resumes no tenant; it reports
// each planning module's plan, nothing for a module with nothing to
// create (the memory backend), and fails the tenant when a module that
// provisions cannot plan (a third-party part) or for the zero tenant.
// The provisioning parts are stand-ins (what is tested is the
// orchestration; each backend's plan is tested on its server).
func TestProvisionAllDryRunProvisionsNothing(t *testing.T) {
	type core struct{}
	var provisioned atomic.Int32
	provision := func(context.Context, tenancy.ID) error { provisioned.Add(1); return nil }
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(), memory.Module("cache"),
		fx.Provide(func() core { return core{} }),
		modules.ProvideTenantState(func(core) modules.TenantState {
			return modules.TenantState{Module: "db", Backend: "sql", Provision: provision,
				Plan: func(_ context.Context, id tenancy.ID) ([]migrate.Change, error) {
					return []migrate.Change{{Tenant: id, Module: "db", Create: "schema s_" + id.Hex()}, {Tenant: id, Module: "db", Version: 1, Name: "init"}}, nil
				}}
		}),
		fx.Populate(&tenants))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := manyTenants(2)
	tenants.Suspend(ids[0])
	rep := tenants.ProvisionAll(ctx, append(ids, tenancy.ID{}), migrate.Options{DryRun: true, Concurrency: 1})
	if rep.Done != 2 || len(rep.Failures) != 1 || tenancy.CodeOf(rep.Failures[0].Err) != tenancy.CodeTenantUnbound {
		t.Fatalf("dry run: %+v", rep)
	}
	var got []string
	for _, c := range rep.Changes {
		got = append(got, c.Module+" "+c.Tenant.String()+" "+c.Create+c.Name)
	}
	slices.Sort(got)
	want := []string{"db " + ids[0].String() + " init", "db " + ids[0].String() + " schema s_" + ids[0].Hex(),
		"db " + ids[1].String() + " init", "db " + ids[1].String() + " schema s_" + ids[1].Hex()}
	if !slices.Equal(got, want) {
		t.Fatalf("plan %q, want %q", got, want)
	}
	if n := provisioned.Load(); n != 0 || !tenants.Suspended(ids[0]) {
		t.Fatalf("a dry run provisioned %d times, suspended %v", n, tenants.Suspended(ids[0]))
	}

	// A module that provisions but cannot plan fails the tenant.
	app = fx.New(fx.NopLogger, modules.Lifecycle(),
		fx.Provide(func() core { return core{} }),
		modules.ProvideTenantState(func(core) modules.TenantState {
			return modules.TenantState{Module: "third", Backend: "x", Provision: provision}
		}),
		fx.Populate(&tenants))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	rep = tenants.ProvisionAll(ctx, ids[:1], migrate.Options{DryRun: true})
	if rep.Done != 0 || len(rep.Failures) != 1 || !errors.Is(rep.Failures[0].Err, migrate.ErrNoProvisionPlan) || provisioned.Load() != 0 {
		t.Fatalf("a part without a plan: %+v, provisioned %d", rep, provisioned.Load())
	}
}
