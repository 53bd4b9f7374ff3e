package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// The wiring rules of RequiredVersion, written once for every backend: a
// version above the newest migration, and a per-tenant module without a
// registry for the start-up check, are problems naming the adapter's own
// options; a module whose tenants share one container needs no registry.
func TestVersioningProblems(t *testing.T) {
	reg := migrate.NewMemoryRegistry()
	for name, c := range map[string]struct {
		v         migrate.Versioning
		latest    int64
		perTenant bool
		want      []string // each problem's detail and fix, in order
	}{
		"nothing required":    {migrate.Versioning{}, 0, true, nil},
		"current set":         {migrate.Versioning{Required: 3, Registry: reg}, 3, true, nil},
		"above newest":        {migrate.Versioning{Required: 4, Registry: reg}, 3, true, []string{"RequiredVersion 4 is above the newest migration (3)", "modules.Migrations"}},
		"no registry":         {migrate.Versioning{Required: 3}, 3, true, []string{"needs to know the module's tenants at start", "modules.TenantRegistry"}},
		"shared, no registry": {migrate.Versioning{Required: 3}, 3, false, nil},
		"both": {migrate.Versioning{Required: 1}, 0, true, []string{"above the newest migration (0)", "modules.Migrations",
			"tenants at start", "modules.TenantRegistry"}},
	} {
		t.Run(name, func(t *testing.T) {
			ps := c.v.Problems(c.latest, c.perTenant)
			if len(ps)*2 != len(c.want) {
				t.Fatalf("problems %+v, want %q", ps, c.want)
			}
			for i, p := range ps {
				if !strings.Contains(p.Detail, c.want[2*i]) || !strings.Contains(p.Fix, c.want[2*i+1]) {
					t.Fatalf("problem %+v, want detail %q and fix naming %q", p, c.want[2*i], c.want[2*i+1])
				}
			}
		})
	}
}

// Load reads the files of the backend's kind; without Files there is no
// set and no problem, and a misnamed file or a file of another kind is a
// problem whose fix names the kind.
func TestVersioningLoad(t *testing.T) {
	if set, ps := (migrate.Versioning{}).Load("sql"); set != nil || ps != nil {
		t.Fatalf("no files: %v %v", set, ps)
	}
	set, ps := migrate.Versioning{Files: fstest.MapFS{"0002_b.sql": {Data: []byte("b")}, "0001_a.sql": {Data: []byte("a")}}}.Load("sql")
	if ps != nil || set.Latest() != 2 || set[0].Name != "a" {
		t.Fatalf("two files: %v %v", set, ps)
	}
	for _, name := range []string{"add.sql", "0001_a.json"} {
		set, ps := migrate.Versioning{Files: fstest.MapFS{name: {Data: []byte("x")}}}.Load("sql")
		if set != nil || len(ps) != 1 || !strings.Contains(ps[0].Detail, name) || !strings.Contains(ps[0].Fix, "<version>_<name>.sql") {
			t.Fatalf("%s: %v %+v", name, set, ps)
		}
	}
}

// The start-up check: nothing without a gate; the shared container first
// (its refusal stops the check); the registry only when the tenants have
// containers of their own.
func TestVersioningStart(t *testing.T) {
	ctx := context.Background()
	reg := migrate.NewMemoryRegistry()
	_ = reg.Put(ctx, tenancytest.TenantA, migrate.Ready)
	v := migrate.Versioning{Required: 2, Registry: reg}
	g := migrate.NewGate("orders", "postgres", 2)
	sharedRead := 0
	shared := func(err error) func(context.Context) error {
		return func(context.Context) error { sharedRead++; return err }
	}
	if err := v.Start(ctx, nil, true, shared(errors.New("read"))); err != nil || sharedRead != 0 {
		t.Fatalf("no gate: %v, %d shared reads", err, sharedRead)
	}
	if err := v.Start(ctx, g, false, shared(nil)); err != nil || sharedRead != 1 {
		t.Fatalf("shared only, current: %v, %d shared reads (the registry's tenant is behind, but shares the container)", err, sharedRead)
	}
	behind := errors.New("the shared tables are behind")
	if err := v.Start(ctx, g, true, shared(behind)); !errors.Is(err, behind) {
		t.Fatalf("shared behind: %v", err)
	}
	err := v.Start(ctx, g, true, nil)
	if e := tenancytest.RequireCode(t, err, tenancy.CodeTenantMigrationBehind, "postgres", "orders", ""); !strings.Contains(e.Detail, tenancytest.TenantA.String()+" (at 0)") {
		t.Fatalf("registry: %v", err)
	}
	_ = reg.SetVersion(ctx, tenancytest.TenantA, "orders", 2)
	if err := v.Start(ctx, g, true, nil); err != nil {
		t.Fatalf("registry current: %v", err)
	}
}

// CheckTenant tells a tenant never provisioned from one behind: at
// version 0 with its own container missing the call is
// tenant_not_provisioned, naming the container and the module's runner;
// with the container there it is behind. The container is looked for only
// for a tenant at 0, never for the shared target, and a current tenant
// pays for neither read.
func TestGateCheckTenant(t *testing.T) {
	ctx := context.Background()
	g := migrate.NewGate("orders", "mongodb", 2)
	a := tenancytest.TenantA
	looked := 0
	at := func(v int64) func(context.Context) (int64, error) {
		return func(context.Context) (int64, error) { return v, nil }
	}
	missing := func(what string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { looked++; return what, nil }
	}
	err := g.CheckTenant(ctx, a, "s1", "docs", at(0), missing("collection orders_x in database shop"))
	e := tenancytest.RequireCode(t, err, tenancy.CodeTenantNotProvisioned, "mongodb", "orders", "docs", a.String(), "collection orders_x in database shop", "never provisioned")
	if !strings.Contains(e.Fix, "Provision(ctx, tenant)") || !strings.Contains(e.Fix, `name:"orders"`) {
		t.Fatalf("fix %q does not name the module's runner", e.Fix)
	}
	if err := g.CheckTenant(ctx, a, "s1", "docs", at(0), missing("")); tenancy.CodeOf(err) != tenancy.CodeTenantMigrationBehind {
		t.Fatalf("provisioned at 0: %v", err)
	}
	if err := g.CheckTenant(ctx, a, "s1", "docs", at(1), missing("gone")); tenancy.CodeOf(err) != tenancy.CodeTenantMigrationBehind || looked != 2 {
		t.Fatalf("at 1: %v, looked %d times, want 2", err, looked)
	}
	if err := g.CheckTenant(ctx, tenancy.ID{}, "s1", "docs", at(0), missing("gone")); tenancy.CodeOf(err) != tenancy.CodeTenantMigrationBehind || looked != 2 {
		t.Fatalf("shared target: %v, looked %d times, want 2", err, looked)
	}
	fail := errors.New("list failed")
	if err := g.CheckTenant(ctx, a, "s1", "docs", at(0), func(context.Context) (string, error) { return "", fail }); !errors.Is(err, fail) {
		t.Fatalf("a failed look: %v", err)
	}
	if err := g.CheckTenant(ctx, a, "s1", "docs", at(2), missing("gone")); err != nil {
		t.Fatal(err)
	}
	if err := g.CheckTenant(ctx, a, "s1", "docs", at(0), missing("gone")); err != nil || looked != 2 {
		t.Fatalf("current tenant: %v, looked %d times, want 2", err, looked)
	}
}
