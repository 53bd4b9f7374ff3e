package modules_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// versionCore stands for a backend module's core: the gate it holds and
// how often its shared container was read.
type versionCore struct {
	gate       *migrate.Gate
	sharedRead int
}

func versionSpec(v migrate.Versioning, invalid ...tenancy.Problem) (*modules.Spec, *versionCore) {
	core := &versionCore{gate: migrate.NewGate("kit", "demo", v.Required)}
	s := kitSpec(1, "a")
	s.Parts = []fx.Option{fx.Provide(func() *versionCore { return core })}
	modules.AddVersions(&s, modules.Versions[*versionCore]{Versioning: v, Latest: 2, PerTenant: true, Invalid: invalid,
		Gate:   func(c *versionCore) *migrate.Gate { return c.gate },
		Shared: func(c *versionCore, _ context.Context) error { c.sharedRead++; return nil }})
	return &s, core
}

// AddVersions refuses the backend's own problems with its migrations and
// the Versioning's as the backend's wiring_invalid, naming the module.
func TestAddVersionsRefuses(t *testing.T) {
	s, _ := versionSpec(migrate.Versioning{Required: 3}, tenancy.Problem{Detail: "migration 0001_a.kit holds nothing", Fix: "fill it"})
	var details []string
	for _, err := range s.Problems {
		e := tenancytest.RequireCode(t, err, tenancy.CodeWiringInvalid, "demo", "kit", "")
		details = append(details, e.Detail)
	}
	if got := strings.Join(details, "; "); len(details) != 3 || !strings.Contains(got, "holds nothing") ||
		!strings.Contains(got, "above the newest migration (2)") || !strings.Contains(got, "tenants at start") {
		t.Fatalf("problems: %s", got)
	}
	tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, modules.Assemble(*s))
}

// With a required version the app does not start while a registered
// tenant is behind, and starts once it is current; the shared container
// is read at start. Without one nothing is added: no start-up read.
func TestAddVersionsStartCheck(t *testing.T) {
	ctx := context.Background()
	reg := migrate.NewMemoryRegistry()
	_ = reg.Put(ctx, tenancytest.TenantA, migrate.Ready)
	s, core := versionSpec(migrate.Versioning{Required: 2, Registry: reg})
	if len(s.Problems) != 0 {
		t.Fatal(s.Problems)
	}
	app := fx.New(fx.NopLogger, modules.Assemble(*s))
	err := app.Start(ctx)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantMigrationBehind, "demo", "kit", "", "1 registered tenants are behind migration version 2")
	if core.sharedRead != 1 {
		t.Fatalf("shared container read %d times at start, want 1", core.sharedRead)
	}
	_ = reg.SetVersion(ctx, tenancytest.TenantA, "kit", 2)
	app = fx.New(fx.NopLogger, modules.Assemble(*s))
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_ = app.Stop(ctx)
	s, core = versionSpec(migrate.Versioning{Registry: reg})
	before := len(s.Parts)
	app = fx.New(fx.NopLogger, modules.Assemble(*s))
	if err := app.Start(ctx); err != nil || core.sharedRead != 0 || before != 1 {
		t.Fatalf("nothing required: %v, %d shared reads, %d parts", err, core.sharedRead, before)
	}
	_ = app.Stop(ctx)
}

// A module requiring a version is not ready while a tenant registered
// since the start is behind: the start-up check is also its readiness
// check, naming the module, and ready again once the tenant is migrated.
func TestAddVersionsReadiness(t *testing.T) {
	ctx := context.Background()
	reg := migrate.NewMemoryRegistry()
	s, _ := versionSpec(migrate.Versioning{Required: 2, Registry: reg})
	var ready modules.Readiness
	app := fx.New(fx.NopLogger, modules.Assemble(*s), fx.Populate(&ready))
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(ctx) }()
	if ok, res := ready.Check(ctx, time.Second); !ok || len(res) != 1 {
		t.Fatalf("no tenant yet: %v %+v", ok, res)
	}
	_ = reg.Put(ctx, tenancytest.TenantA, migrate.Ready)
	ok, res := ready.Check(ctx, time.Second)
	if ok || len(res) != 1 || res[0].OK || res[0].Module != "kit" || !strings.Contains(res[0].Error, "behind migration version 2") {
		t.Fatalf("a tenant behind: %v %+v", ok, res)
	}
	_ = reg.SetVersion(ctx, tenancytest.TenantA, "kit", 2)
	if ok, res := ready.Check(ctx, time.Second); !ok {
		t.Fatalf("the tenant migrated: %+v", res)
	}
}

// gated is a module's core for versionModule: the gate it holds. Each
// module of an app has a core type of its own.
type gated[T any] struct{ gate *migrate.Gate }

// versionModule is a module of the kit named name needing version need,
// its tenants listed by reg.
func versionModule[T any](name string, need int64, reg migrate.Registry) fx.Option {
	core := &gated[T]{gate: migrate.NewGate(name, "demo", need)}
	s := kitSpec(1, name)
	s.Name = name
	s.Parts = []fx.Option{fx.Provide(func() *gated[T] { return core })}
	modules.AddVersions(&s, modules.Versions[*gated[T]]{Versioning: migrate.Versioning{Required: need, Registry: reg}, Latest: 3, PerTenant: true,
		Gate: func(c *gated[T]) *migrate.Gate { return c.gate }})
	return modules.Assemble(s)
}

// The start-up refusal names every module behind, each with how far (its
// tenants' versions and the version it needs), not only the module whose
// hook ran first; a module that is current is not named.
func TestAddVersionsRefusalNamesEveryModuleBehind(t *testing.T) {
	ctx := context.Background()
	reg := migrate.NewMemoryRegistry()
	_ = reg.Put(ctx, tenancytest.TenantA, migrate.Ready)
	_ = reg.SetVersion(ctx, tenancytest.TenantA, "alpha", 1)
	_ = reg.SetVersion(ctx, tenancytest.TenantA, "beta", 2)
	_ = reg.SetVersion(ctx, tenancytest.TenantA, "gamma", 1)
	type a struct{}
	type b struct{}
	type c struct{}
	app := fx.New(fx.NopLogger, versionModule[a]("alpha", 2, reg), versionModule[b]("beta", 2, reg), versionModule[c]("gamma", 3, reg))
	err := app.Start(ctx)
	got := map[string]string{}
	for _, e := range codedErrors(err) {
		if e.Code != tenancy.CodeTenantMigrationBehind || e.Fix == "" {
			t.Fatalf("refusal %v", e)
		}
		got[e.Module] = e.Detail
	}
	want := map[string]string{
		"alpha": "behind migration version 2: " + tenancytest.TenantA.String() + " (at 1)",
		"gamma": "behind migration version 3: " + tenancytest.TenantA.String() + " (at 1)",
	}
	if len(got) != len(want) {
		t.Fatalf("modules named: %v (%v)", got, err)
	}
	for m, d := range want {
		if !strings.Contains(got[m], d) {
			t.Fatalf("module %s: %q, want it to name %q", m, got[m], d)
		}
	}
	_ = reg.SetVersion(ctx, tenancytest.TenantA, "alpha", 2)
	_ = reg.SetVersion(ctx, tenancytest.TenantA, "gamma", 3)
	app = fx.New(fx.NopLogger, versionModule[a]("alpha", 2, reg), versionModule[b]("beta", 2, reg), versionModule[c]("gamma", 3, reg))
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_ = app.Stop(ctx)
}

// A module with a server check and a version check lists both in /readyz,
// each under a name of its own, and only the server check carries the
// module's routed pool.
func TestReadyChecksNamed(t *testing.T) {
	ctx := context.Background()
	reg := migrate.NewMemoryRegistry()
	_ = reg.Put(ctx, tenancytest.TenantA, migrate.Ready)
	type a struct{}
	var ready modules.Readiness
	app := fx.New(fx.NopLogger, versionModule[a]("alpha", 2, reg),
		modules.ProvideServerCheck("alpha", "demo", func(*gated[a]) bool { return false }, func(context.Context, *gated[a]) error { return nil }),
		fx.Populate(&ready))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ok, res := ready.Check(ctx, time.Second)
	if ok || len(res) != 2 || res[0].Name != "alpha/server" || !res[0].OK || res[1].Name != "alpha/version" || res[1].OK ||
		res[0].Module != "alpha" || res[1].Module != "alpha" || !strings.Contains(res[1].Error, "behind migration version 2") {
		t.Fatalf("ready %v, results %+v", ok, res)
	}
}
