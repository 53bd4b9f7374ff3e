package neo4j_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// lifecycleApp starts module with modules.Lifecycle and returns the app's
// Tenants and the module's runner.
func lifecycleApp(t *testing.T, module string, opts ...neo4j.Option) (*modules.Tenants, *migrate.Runner) {
	t.Helper()
	var tenants *modules.Tenants
	var m *migrate.Runner
	app := fx.New(fx.NopLogger, modules.Lifecycle(), neo4j.Module(module, opts...),
		fx.Invoke(fx.Annotate(func(tt *modules.Tenants, mm *migrate.Runner) { tenants, m = tt, mm }, fx.ParamTags(``, `name:"`+module+`"`))))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return tenants, m
}

// databases is the names of the server's databases starting with prefix.
func (d direct) databases(prefix string) []string {
	d.t.Helper()
	var out []string
	for _, r := range d.query("SHOW DATABASES YIELD name WHERE name STARTS WITH $p RETURN DISTINCT name ORDER BY name", map[string]any{"p": prefix}) {
		out = append(out, r.Values[0].(string))
	}
	return out
}

// registered is tenant's registry entry ("" when absent): its state and
// versions.
func registered(t *testing.T, reg *migrate.MemoryRegistry, tenant tenancy.ID) string {
	t.Helper()
	all, err := reg.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.ID == tenant {
			return fmt.Sprintf("%s %v", e.State, e.Versions)
		}
	}
	return ""
}

// line is the module's line of a Tenants report.
func line(t *testing.T, rep modules.Report, module string) modules.StepReport {
	t.Helper()
	for _, l := range rep {
		if l.Module == module {
			return l
		}
	}
	t.Fatalf("report %+v has no line for %s", rep, module)
	return modules.StepReport{}
}

// TestRunnerProvisionCreatesTheTenantsDatabase: the module's runner (and
// Tenants.Provision) reaches CREATE DATABASE for a per-tenant database
// route. On Community Edition the server refuses: the error wraps
// ErrEnterpriseRequired and says what to do, nothing is created, and the
// registry holds the tenant as provisioning only (not ready, no version),
// so no step ran. On Enterprise the database exists afterwards, migrated,
// and a rerun changes nothing.
func TestRunnerProvisionCreatesTheTenantsDatabase(t *testing.T) {
	s := testsvc.Neo4j(t)
	label, module, ds := migrationScope(t, s)
	d := ds[0]
	ctx := context.Background()
	fresh := tenancytest.FreshTenant(t)
	prefix := "twpv" + fresh.Hex()[:6]
	db := prefix + "-" + fresh.Hex()
	reg := migrate.NewMemoryRegistry()
	tenants, m := lifecycleApp(t, module, connect(s), modules.AllowTeardown(),
		neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.PerTenant(prefix)}),
		modules.Migrations(threeSteps(label, false)), modules.TenantRegistry(reg))
	community := d.edition() == "community"
	if !community {
		t.Cleanup(func() { _, _ = tenants.Offboard(ctx, fresh) })
	}

	err := m.Provision(ctx, fresh)
	if community {
		if !errors.Is(err, neo4j.ErrEnterpriseRequired) {
			t.Fatalf("Community Edition: runner Provision %v, want ErrEnterpriseRequired", err)
		}
		for _, want := range []string{db, "(fix: ", "Enterprise Edition"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		}
		if got := registered(t, reg, fresh); got != "provisioning map[]" {
			t.Errorf("registry after a refused provisioning: %q, want provisioning with no version", got)
		}
		rep, err := tenants.Provision(ctx, fresh)
		if l := line(t, rep, module); !errors.Is(err, neo4j.ErrEnterpriseRequired) || !errors.Is(l.Err, neo4j.ErrEnterpriseRequired) || l.Skipped != "" {
			t.Fatalf("Tenants.Provision on Community: %+v, %v", l, err)
		}
		rep2, err := m.ProvisionAll(ctx, []tenancy.ID{fresh}, migrate.Options{})
		if err != nil || rep2.Done != 0 || len(rep2.Failures) != 1 || !errors.Is(rep2.Failures[0].Err, neo4j.ErrEnterpriseRequired) {
			t.Fatalf("ProvisionAll on Community: %+v, %v", rep2, err)
		}
		if got := d.databases(prefix); len(got) != 0 {
			t.Fatalf("databases after a refused provisioning: %v", got)
		}
		if got := registered(t, reg, fresh); got != "provisioning map[]" {
			t.Errorf("registry after refused provisionings: %q", got)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := d.databases(prefix); !slices.Equal(got, []string{db}) {
		t.Fatalf("databases after provisioning: %v, want %s", got, db)
	}
	if got := registered(t, reg, fresh); got != fmt.Sprintf("ready map[%s:3]", module) {
		t.Fatalf("registry after provisioning: %q", got)
	}
	if err := m.Provision(ctx, fresh); err != nil {
		t.Fatalf("provisioning again: %v", err)
	}
}

// TestRunnerProvisionExistingDatabaseMigratesIt: a per-tenant database
// route whose resolver names a database the server has (here Community's
// one user database) is provisioned without CREATE DATABASE: the runner
// migrates the database and records the tenant ready at the newest
// version; a rerun is idempotent.
func TestRunnerProvisionExistingDatabaseMigratesIt(t *testing.T) {
	s := testsvc.Neo4j(t)
	label, module, ds := migrationScope(t, s)
	ctx := context.Background()
	fresh := tenancytest.FreshTenant(t)
	reg := migrate.NewMemoryRegistry()
	tenants, _ := lifecycleApp(t, module, connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.Func(defaultDB)}),
		modules.Migrations(threeSteps(label, false)), modules.TenantRegistry(reg))
	for range 2 {
		if rep, err := tenants.Provision(ctx, fresh); err != nil {
			t.Fatalf("provisioning a tenant whose database exists: %+v, %v", rep, err)
		}
	}
	if h := fmt.Sprint(ds[0].history(module)); h != fmt.Sprint(historyOf(fresh, 1, 2, 3)) {
		t.Fatalf("history: %s", h)
	}
	if got := registered(t, reg, fresh); got != fmt.Sprintf("ready map[%s:3]", module) {
		t.Fatalf("registry: %q", got)
	}
}

// TestRunnerProvisionTaggedOnlyMigrates: a module with tagged routes only
// has no database of a tenant's to create: Tenants.Provision runs the
// module's runner (no longer skipped as "nothing to create"), which
// migrates the shared database and records the tenant ready. (That a
// tagged route creates no database is shown on the recording driver, in
// TestRunnerProvisionCreatesEachDatabaseOnce.)
func TestRunnerProvisionTaggedOnlyMigrates(t *testing.T) {
	s := testsvc.Neo4j(t)
	label, module, ds := migrationScope(t, s)
	d := ds[0]
	ctx := context.Background()
	fresh := tenancytest.FreshTenant(t)
	reg := migrate.NewMemoryRegistry()
	tenants, _ := lifecycleApp(t, module, connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true}),
		modules.Migrations(threeSteps(label, true)), modules.TenantRegistry(reg))
	rep, err := tenants.Provision(ctx, fresh)
	if l := line(t, rep, module); err != nil || l.Err != nil || l.Skipped != "" {
		t.Fatalf("Tenants.Provision: %+v, %v", l, err)
	}
	if h := fmt.Sprint(d.history(module)); h != "[shared/1/applied shared/2/applied shared/3/applied]" {
		t.Fatalf("shared history: %s", h)
	}
	if got := registered(t, reg, fresh); !strings.HasPrefix(got, "ready ") {
		t.Fatalf("registry: %q", got)
	}
}

// TestProvisionAllDryRunListsTheDatabases: ProvisionAll's dry run reports
// the database each tenant would get (none for a tenant whose database
// exists) and the steps that would run on it, and changes nothing: no
// database, no history, no registry entry.
func TestProvisionAllDryRunListsTheDatabases(t *testing.T) {
	s := testsvc.Neo4j(t)
	label, module, ds := migrationScope(t, s)
	d := ds[0]
	ctx := context.Background()
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	prefix := "twdr" + b.Hex()[:6]
	// A's database is the server's own; B's does not exist.
	names := naming.Func(func(id tenancy.ID) (string, error) {
		if id == a {
			return "neo4j", nil
		}
		return prefix + "-" + id.Hex(), nil
	})
	reg := migrate.NewMemoryRegistry()
	_, m := lifecycleApp(t, module, connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{Database: names}),
		modules.Migrations(threeSteps(label, false)), modules.TenantRegistry(reg))
	rep, err := m.ProvisionAll(ctx, []tenancy.ID{a, b}, migrate.Options{DryRun: true, Concurrency: 1})
	if err != nil || rep.Done != 2 || len(rep.Failures) != 0 {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	var plan []string
	for _, c := range rep.Changes {
		what := c.Create
		if what == "" {
			what = fmt.Sprintf("step %d", c.Version)
		}
		plan = append(plan, fmt.Sprintf("%s %s", c.Tenant, what))
	}
	slices.Sort(plan)
	want := []string{a.String() + " step 1", a.String() + " step 2", a.String() + " step 3",
		b.String() + " " + prefix + "-" + b.Hex(), b.String() + " step 1", b.String() + " step 2", b.String() + " step 3"}
	slices.Sort(want)
	if !slices.Equal(plan, want) {
		t.Fatalf("dry run plan\n%q\nwant\n%q", plan, want)
	}
	if got := d.databases(prefix); len(got) != 0 {
		t.Fatalf("a dry run created %v", got)
	}
	if h := d.history(module); len(h) != 0 {
		t.Fatalf("a dry run wrote history %v", h)
	}
	if all, _ := reg.List(ctx); len(all) != 0 {
		t.Fatalf("a dry run registered %+v", all)
	}
}
