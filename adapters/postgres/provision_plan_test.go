package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestProvisionAllDryRunListsWhatIsMissing: ProvisionAll's dry run lists,
// per tenant, the schema, tables, indexes and role its provisioning would
// create (a static table too, while the server lacks it) and the steps
// that would run, asking the server; afterwards the server has none of
// them, no step ran and the registry is empty. On a provisioned tenant it
// lists nothing; the zero tenant is refused.
func TestProvisionAllDryRunListsWhatIsMissing(t *testing.T) {
	f := newMigFixture(t)
	u := unique()
	static := "ctr_" + u
	c := start(t, f.module(modules.Migrations(f.threeSteps()),
		postgres.SearchRoute("texts", postgres.SearchConfig{Read: naming.PerTenant("texts"), Heap: naming.PerTenant("texts"), Index: naming.PerTenant("texts_tsv")}),
		postgres.OutboxRoute("events", postgres.OutboxConfig{TenantAware: true, Table: naming.PerTenant("events")}),
		postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true}),
		postgres.CounterRoute("hits", postgres.CounterConfig{TenantAware: true, Table: naming.Shared(static)})))
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	t.Cleanup(func() {
		teardown(t, c, a, b)
		_, _ = f.pool.Exec(context.Background(), "DROP TABLE IF EXISTS public."+static)
	})
	ctx := context.Background()
	want := func(id tenancy.ID, withStatic bool) []string {
		s := postgres.SchemaName(f.prefix, id)
		out := []string{"schema " + s, "table " + s + ".docs", "table " + s + ".texts", "index " + s + ".texts_tsv",
			"table " + s + ".events", "index " + s + ".events_pending"}
		if withStatic {
			out = append(out, "table public."+static)
		}
		return append(out, "role "+postgres.RoleName(f.prefix, id), "step 1", "step 2", "step 3")
	}

	rep, err := c.ProvisionAll(ctx, []tenancy.ID{a, b, {}}, migrate.Options{DryRun: true, Concurrency: 1})
	if err != nil || rep.Done != 2 || len(rep.Failures) != 1 || tenancy.CodeOf(rep.Failures[0].Err) != tenancy.CodeTenantUnbound {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	got := testsvc.Plan(rep)
	for _, id := range []tenancy.ID{a, b} {
		if !slices.Equal(got[id], want(id, true)) {
			t.Errorf("plan of %s\n%q\nwant\n%q", id, got[id], want(id, true))
		}
	}
	// The server has none of it: no schema, role or static table, and no
	// step ran.
	var n int
	must0(t, f.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname LIKE $1 || '%')
		+ (SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname LIKE $1 || '%')
		+ (SELECT count(*) FROM pg_catalog.pg_class WHERE relname = $2)`, f.prefix, static).Scan(&n))
	if n != 0 {
		t.Fatalf("a dry run created %d objects", n)
	}
	if ran := f.applied(t); len(ran) != 0 {
		t.Fatalf("a dry run ran steps %v", ran)
	}
	if all, err := f.reg.List(ctx); err != nil || len(all) != 0 {
		t.Fatalf("a dry run registered %+v, %v", all, err)
	}

	// Provisioned, A has nothing to create and no step to run; B's plan no
	// longer has the static table A's provisioning made.
	must0(t, c.Provision(ctx, a))
	rep, err = c.ProvisionAll(ctx, []tenancy.ID{a, b}, migrate.Options{DryRun: true, Concurrency: 1})
	if err != nil || rep.Done != 2 {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	got = testsvc.Plan(rep)
	if len(got[a]) != 0 || !slices.Equal(got[b], want(b, false)) {
		t.Fatalf("after provisioning A: A's plan %q, B's %q, want none and %q", got[a], got[b], want(b, false))
	}

	// A table dropped behind the module's back is listed again.
	_, err = f.pool.Exec(ctx, "DROP TABLE "+postgres.SchemaName(f.prefix, a)+".events")
	must0(t, err)
	rep, err = c.ProvisionAll(ctx, []tenancy.ID{a}, migrate.Options{DryRun: true})
	s := postgres.SchemaName(f.prefix, a)
	if got := testsvc.Plan(rep)[a]; err != nil || !slices.Equal(got, []string{"table " + s + ".events", "index " + s + ".events_pending"}) {
		t.Fatalf("plan after a drop: %q, %v", got, err)
	}
}
