package migrate_test

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestMemoryRegistryRemovesAModuleAtATime: a tenant two modules recorded
// stays listed after one module's removal, with the other's version, and
// goes with the last.
func TestMemoryRegistryRemovesAModuleAtATime(t *testing.T) {
	ctx := context.Background()
	r := migrate.NewMemoryRegistry()
	a := tenancytest.TenantA
	for _, err := range []error{r.Put(ctx, a, migrate.Ready), r.SetVersion(ctx, a, "one", 2), r.SetVersion(ctx, a, "two", 1)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := r.RemoveModule(ctx, a, "one"); err != nil {
		t.Fatal(err)
	}
	all, _ := r.List(ctx)
	if len(all) != 1 || len(all[0].Versions) != 1 || all[0].Versions["two"] != 1 {
		t.Fatalf("after module one's removal: %+v", all)
	}
	if err := r.RemoveModule(ctx, a, "two"); err != nil {
		t.Fatal(err)
	}
	if all, _ := r.List(ctx); len(all) != 0 {
		t.Fatalf("after the last module's removal: %+v", all)
	}
}

// TestSharedRegistryKeepsATenantEveryModuleHolds: a module whose
// migrations are its shared target's only (tagged rows) and a module with
// none record a tenant in one registry as per-tenant modules do: after
// either one's teardown the tenant is still listed, with the other's
// version, and it goes with the second teardown.
func TestSharedRegistryKeepsATenantEveryModuleHolds(t *testing.T) {
	ctx := context.Background()
	for _, first := range []string{"tagged", "plain"} {
		reg := migrate.NewMemoryRegistry()
		runners := map[string]*migrate.Runner{
			"tagged": migrate.NewRunner(migrate.Spec{Module: "tagged", Backend: "mem", Set: threeSteps(t), Registry: reg, Shared: true, AllowTeardown: true}, newMem()),
			"plain":  migrate.NewRunner(migrate.Spec{Module: "plain", Backend: "mem", Registry: reg, PerTenant: true, AllowTeardown: true}, newMem()),
		}
		if err := runners["tagged"].ProvisionShared(ctx); err != nil {
			t.Fatal(err)
		}
		for _, r := range runners {
			if err := r.Provision(ctx, tenantA); err != nil {
				t.Fatal(err)
			}
		}
		second := map[string]string{"tagged": "plain", "plain": "tagged"}[first]
		if err := runners[first].Teardown(ctx, tenantA); err != nil {
			t.Fatal(err)
		}
		all, _ := reg.List(ctx)
		if len(all) != 1 {
			t.Fatalf("after module %s's teardown the registry lists %+v: the tenant %s still holds is gone", first, all, second)
		}
		if _, ok := all[0].Versions[second]; !ok || len(all[0].Versions) != 1 {
			t.Fatalf("after module %s's teardown the versions are %v, want %s's only", first, all[0].Versions, second)
		}
		if err := runners[second].Teardown(ctx, tenantA); err != nil {
			t.Fatal(err)
		}
		if all, _ := reg.List(ctx); len(all) != 0 {
			t.Fatalf("after both teardowns: %+v", all)
		}
	}
}
