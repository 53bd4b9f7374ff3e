package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A tenant found current is remembered for its own target only: another
// tenant on that target, or the same tenant on another target (a
// re-routed tenant), is read again; a teardown forgets it.
func TestGateRemembersTenantAndTarget(t *testing.T) {
	ctx := context.Background()
	g := migrate.NewGate("orders", "neo4j", 3)
	a, b := tenancytest.TenantA, tenancytest.TenantB
	reads := 0
	at := func(v int64) func(context.Context) (int64, error) {
		return func(context.Context) (int64, error) { reads++; return v, nil }
	}
	if err := g.Check(ctx, a, "s1/db", "r", at(3)); err != nil || reads != 1 {
		t.Fatalf("current tenant: %v, %d reads", err, reads)
	}
	if err := g.Check(ctx, a, "s1/db", "r", at(0)); err != nil || reads != 1 {
		t.Fatalf("remembered tenant: %v, %d reads, want no read", err, reads)
	}
	err := g.Check(ctx, b, "s1/db", "r", at(2))
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeTenantMigrationBehind || te.Route != "r" || !strings.Contains(te.Detail, b.String()+" is at migration version 2") {
		t.Fatalf("B on A's target: %v", err)
	}
	if err := g.Check(ctx, a, "s2/db", "r", at(1)); tenancy.CodeOf(err) != tenancy.CodeTenantMigrationBehind {
		t.Fatalf("A on another target: %v", err)
	}
	g.Mark(b, "s1/db", 2) // below Need: not current
	if err := g.Check(ctx, b, "s1/db", "r", at(2)); err == nil {
		t.Fatal("a migration to 2 marked B current for 3")
	}
	g.Mark(b, "s1/db", 3)
	before := reads
	if err := g.Check(ctx, b, "s1/db", "r", at(0)); err != nil || reads != before {
		t.Fatalf("marked tenant: %v, %d reads", err, reads-before)
	}
	g.Forget(a)
	if err := g.Check(ctx, a, "s1/db", "r", at(0)); err == nil {
		t.Fatal("a forgotten tenant was still current")
	}
	if migrate.NewGate("m", "x", 0) != nil {
		t.Fatal("a gate without a required version")
	}
}

// The start-up refusal names how many tenants are behind and the first
// five with their versions.
func TestGateCheckRegistry(t *testing.T) {
	ctx := context.Background()
	reg := migrate.NewMemoryRegistry()
	g := migrate.NewGate("orders", "kafka", 2)
	var ids []tenancy.ID
	for i := range 7 {
		id := tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1))
		ids = append(ids, id)
		_ = reg.Put(ctx, id, migrate.Ready)
	}
	_ = reg.SetVersion(ctx, ids[0], "orders", 2)
	err := g.CheckRegistry(ctx, reg)
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeTenantMigrationBehind || te.Backend != "kafka" || te.Module != "orders" ||
		!strings.HasPrefix(te.Detail, "6 registered tenants are behind migration version 2: ") || !strings.HasSuffix(te.Detail, " and 1 more") ||
		!strings.Contains(te.Detail, ids[1].String()+" (at 0)") || strings.Contains(te.Detail, ids[0].String()) {
		t.Fatalf("refusal: %v", err)
	}
	for _, id := range ids[1:] {
		_ = reg.SetVersion(ctx, id, "orders", 3)
	}
	if err := g.CheckRegistry(ctx, reg); err != nil {
		t.Fatal(err)
	}
}

// A remembered tenant's check allocates nothing: it is on every call of
// every route of a module with RequiredVersion.
func TestGateCurrentAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	g := migrate.NewGate("orders", "mongodb", 2)
	a := tenancytest.TenantA
	read := func(context.Context) (int64, error) { return 2, nil }
	if err := g.Check(ctx, a, "srv", "r", read); err != nil {
		t.Fatal(err)
	}
	target := "srv"
	n := testing.AllocsPerRun(100, func() {
		// A closure over the call's values, as the adapters pass.
		if err := g.Check(ctx, a, target, "r", func(context.Context) (int64, error) {
			if a.IsZero() {
				return 0, nil
			}
			return int64(len(target)), nil
		}); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per remembered check", n)
	}
}
