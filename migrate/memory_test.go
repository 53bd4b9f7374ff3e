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
