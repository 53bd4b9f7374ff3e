package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestNamespacePastBudgetCachesNothing: past the prepared budget a
// document route caches no statement set per tenant (it renders the one
// statement a call runs), a read allocates no more than a prepared one
// plus that text and the exec mode's arguments, and every statement,
// history included, still reaches only the bound tenant's schema.
func TestNamespacePastBudgetCachesNothing(t *testing.T) {
	const tenants = 40 // past the prepared budget of 32, cheap to provision
	prefix := "tw" + unique() + "_"
	pool, _ := countedPool(t)
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Use(pool), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs"),
			History: naming.PerTenant("docs_history")})), &d)
	ids := make([]tenancy.ID, tenants)
	ctxs := make([]context.Context, tenants)
	for i := range ids {
		ids[i] = scaleTenant(i)
		ctxs[i] = tenancy.WithTenant(context.Background(), ids[i])
	}
	provision(t, c, ids...)
	t.Cleanup(func() { teardown(t, c, ids...) })
	for _, ctx := range ctxs {
		_, err := d.Create(ctx, "k", item{Name: "v", N: 1})
		must0(t, err)
	}
	if n := postgres.CachedStatementSets(c); n > 32 {
		t.Errorf("after %d tenants the client caches %d statement sets, want at most the 32 prepared ones", tenants, n)
	}

	prepared, past := ctxs[0], ctxs[tenants-1]
	get := func(ctx context.Context) func() {
		return func() {
			if _, err := d.Get(ctx, "k"); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Measured: 15 and 18 (pgx v5.12, encoding/json); a statement set
	// built per call would add about 26, the success path of notProvisioned
	// one.
	np, nu := testing.AllocsPerRun(50, get(prepared)), testing.AllocsPerRun(50, get(past))
	t.Logf("allocations per read: %v prepared, %v past the budget", np, nu)
	if np > 15 {
		t.Errorf("a prepared read allocates %v times, want at most 15", np)
	}
	if nu > 18 {
		t.Errorf("a read past the budget allocates %v times, want at most 18", nu)
	}

	// The last tenant's writes, history included, stay in its schema.
	v, err := d.Update(past, "k", item{Name: "w", N: 2}, 1)
	must0(t, err)
	if _, err := d.Update(past, "k", item{}, 1); !errors.Is(err, document.ErrConflict) {
		t.Fatalf("stale Update: %v", err)
	}
	if _, err := d.Update(past, "absent", item{}, 1); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("Update of a missing record: %v", err)
	}
	must0(t, d.Delete(past, "k"))
	if _, err := d.Get(past, "k"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if v != 2 {
		t.Fatalf("Update returned version %d, want 2", v)
	}
	for i, want := range map[int][]string{tenants - 1: {"create", "update", "delete"}, tenants - 2: {"create"}} {
		var ops []string
		must0(t, pool.QueryRow(context.Background(), "SELECT coalesce(array_agg(op ORDER BY seq), '{}') FROM "+
			`"`+postgres.SchemaName(prefix, ids[i])+`".docs_history`).Scan(&ops))
		if len(ops) != len(want) || (len(ops) > 0 && ops[len(ops)-1] != want[len(want)-1]) {
			t.Errorf("tenant %d history %v, want %v", i, ops, want)
		}
	}
	if rec, err := d.Get(ctxs[tenants-2], "k"); err != nil || rec.Value != (item{Name: "v", N: 1}) {
		t.Fatalf("another tenant's record: %+v %v", rec, err)
	}
}
