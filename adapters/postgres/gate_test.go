package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/ownership"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func TestOwnershipGate(t *testing.T) {
	run := unique()
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.DSN(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"), postgres.AllowTeardown(),
		postgres.Document[item]("orders", postgres.DocumentConfig{TenantAware: true, Read: postgres.Table("own_" + run), Write: postgres.Table("own_" + run)}),
		postgres.Document[int]("ns", postgres.DocumentConfig{Read: postgres.SchemaPerTenant("own"), Write: postgres.SchemaPerTenant("own")}),
	), &d)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	t.Cleanup(func() { teardown(t, c, tenancytest.TenantA, tenancytest.TenantB) })
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	if _, err := d.Create(ctxA, "m1", item{}); err != nil {
		t.Fatal(err)
	}
	for name, g := range map[string]*ownership.Gate{
		"tagged": c.Ownership(postgres.OwnershipConfig{Table: postgres.Table("own_" + run), TenantAware: true}),
	} {
		if err := g.Check(ctxA, "m1"); err != nil {
			t.Errorf("%s: owner denied: %v", name, err)
		}
		if err := g.Check(ctxB, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
			t.Errorf("%s: B allowed on A's id: %v", name, err)
		}
		if err := g.Check(context.Background(), "m1"); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
			t.Errorf("%s: unbound: %v", name, err)
		}
	}
	// A per-tenant table: existence in the tenant's own schema is ownership.
	g := c.Ownership(postgres.OwnershipConfig{Table: postgres.SchemaPerTenant("own")})
	if err := g.Check(ctxB, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("per-tenant: %v", err)
	}
	// Fail closed: a query error (here a missing table) denies.
	bad := c.Ownership(postgres.OwnershipConfig{Table: postgres.Table("missing_" + run), TenantAware: true})
	if err := bad.Check(ctxA, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("query error allowed: %v", err)
	}
	// Tenancy off: the gate short-circuits.
	off := c.Ownership(postgres.OwnershipConfig{Table: postgres.Table("own_" + run)})
	if err := off.Check(context.Background(), "anything"); err != nil {
		t.Errorf("tenancy off: %v", err)
	}
}

// TestOwnershipGateLifecycle runs the gate on its real lookup, tagged and
// per-tenant: a real owner is allowed and others denied; an id denied and
// then created by the tenant is allowed at once (denials are not cached);
// an id deleted by its owner and re-created by another tenant is denied to
// the old owner once the gate is told, and allowed to the new one.
func TestOwnershipGateLifecycle(t *testing.T) {
	run := unique()
	var tagged, ns *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.DSN(testsvc.PostgresURL(t)), postgres.SchemaPrefix("tw"+run+"_"),
		postgres.Document[item]("tagged", postgres.DocumentConfig{TenantAware: true, Read: postgres.Table("gl_" + run), Write: postgres.Table("gl_" + run)}),
		postgres.Document[item]("ns", postgres.DocumentConfig{Read: postgres.SchemaPerTenant("gl"), Write: postgres.SchemaPerTenant("gl")}),
	), named("tagged", &tagged), named("ns", &ns))
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	for name, tc := range map[string]struct {
		docs *postgres.Documents[item]
		gate *ownership.Gate
	}{
		"tagged":     {tagged, c.Ownership(postgres.OwnershipConfig{Table: postgres.Table("gl_" + run), TenantAware: true})},
		"per-tenant": {ns, c.Ownership(postgres.OwnershipConfig{Table: postgres.SchemaPerTenant("gl")})},
	} {
		d, g := tc.docs, tc.gate
		if _, err := d.Create(ctxA, "m1", item{}); err != nil {
			t.Fatal(err)
		}
		if err := g.Check(ctxA, "m1"); err != nil {
			t.Errorf("%s: the owner was denied by the real lookup: %v", name, err)
		}
		if err := g.Check(ctxB, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
			t.Errorf("%s: B allowed on A's id: %v", name, err)
		}
		// Denied, then owned.
		if err := g.Check(ctxB, "m2"); !errors.Is(err, ownership.ErrNotOwned) {
			t.Errorf("%s: B allowed on an id nobody owns: %v", name, err)
		}
		if _, err := d.Create(ctxB, "m2", item{}); err != nil {
			t.Fatal(err)
		}
		if err := g.Check(ctxB, "m2"); err != nil {
			t.Errorf("%s: denied, then owned, still denied: %v", name, err)
		}
		// Owned, deleted, re-created by another tenant.
		if err := d.Delete(ctxA, "m1"); err != nil {
			t.Fatal(err)
		}
		// Delete tells the gate itself: no Forget here.
		if _, err := d.Create(ctxB, "m1", item{}); err != nil {
			t.Fatal(err)
		}
		if err := g.Check(ctxA, "m1"); !errors.Is(err, ownership.ErrNotOwned) {
			t.Errorf("%s: the old owner allowed on a re-created id: %v", name, err)
		}
		if err := g.Check(ctxB, "m1"); err != nil {
			t.Errorf("%s: the new owner denied: %v", name, err)
		}
	}
}
