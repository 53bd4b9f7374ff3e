package modules_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// kitConfig is a backend's configuration: the kit's Settings and its own.
type kitConfig struct {
	modules.Settings
	source string
}

type otherConfig struct{ modules.Settings }

func source(s string) modules.Option { return modules.Own(func(c *kitConfig) { c.source = s }) }

// TestConfigureSetsSharedAndOwn: the kit's options land in Settings, the
// backend's own in its configuration, in order.
func TestConfigureSetsSharedAndOwn(t *testing.T) {
	files, reg := fstest.MapFS{}, migrate.NewMemoryRegistry()
	c := &kitConfig{}
	errs := modules.Configure(backend, "kit", c, modules.Takes{Teardown: true, ConnBudget: true, FromGraph: true, Placements: true, Migrations: true}, []modules.Option{
		modules.RequiredIsolation(tenancy.Namespace), modules.AllowTeardown(), modules.ConnBudget(8), modules.FromGraph(),
		modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace}, Default: tenancy.Tagged}),
		modules.Migrations(files), modules.RequiredVersion(3), modules.TenantRegistry(reg), source("a"), source("b"),
	})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	s := c.Settings
	if s.Floor != tenancy.Namespace || !s.Teardown || s.ConnBudget != 8 || !s.FromGraph || s.Offer == nil || s.Offer.Default != tenancy.Tagged ||
		s.Files == nil || s.Required != 3 || s.Registry != reg || c.source != "b" {
		t.Fatalf("configured %+v, source %q", s, c.source)
	}
}

// TestConfigureRefusesWhatTheBackendCannotHonour: an option of another
// backend, a shared option the backend does not take, a nil option and
// values no module can hold are each refused as the backend's
// wiring_invalid, naming the module and the fix, and none is applied.
func TestConfigureRefusesWhatTheBackendCannotHonour(t *testing.T) {
	other := modules.Own(func(c *otherConfig) { c.Floor = tenancy.Dedicated })
	for name, tc := range map[string]struct {
		opt    modules.Option
		detail string
	}{
		"another backend's":    {other, "a modules_test option is not an option of the demo backend"},
		"not taken":            {modules.ConnBudget(4), "does not take modules.ConnBudget"},
		"migrations not taken": {modules.TenantRegistry(migrate.NewMemoryRegistry()), "does not take modules.TenantRegistry"},
		"nil":                  {nil, "<nil> is not an option of the demo backend"},
	} {
		t.Run(name, func(t *testing.T) {
			c := &kitConfig{}
			errs := modules.Configure(backend, "kit", c, modules.Takes{Teardown: true}, []modules.Option{tc.opt, modules.AllowTeardown()})
			if len(errs) != 1 {
				t.Fatalf("refusals %v, want one", errs)
			}
			e := requireWiring(t, errs[0], tc.detail)
			if e.Fix == "" || !c.Teardown || c.ConnBudget != 0 || c.Registry != nil || c.Floor != tenancy.None {
				t.Fatalf("fix %q, configured %+v", e.Fix, c.Settings)
			}
		})
	}
	c := &kitConfig{}
	errs := modules.Configure(backend, "kit", c, modules.Takes{ConnBudget: true, Migrations: true}, []modules.Option{modules.ConnBudget(-1), modules.RequiredVersion(-2)})
	if len(errs) != 2 {
		t.Fatalf("refusals %v, want two", errs)
	}
	_ = requireWiring(t, errs[0], "ConnBudget -1 is negative")
	_ = requireWiring(t, errs[1], "RequiredVersion -2 is negative")
}

func requireWiring(t *testing.T, err error, detail string) *tenancy.Error {
	t.Helper()
	e, ok := err.(*tenancy.Error)
	if !ok || e.Code != tenancy.CodeWiringInvalid || e.Module != "kit" || e.Backend != backend.Name || !strings.Contains(e.Detail, detail) {
		t.Fatalf("got %v, want the kit backend's wiring_invalid saying %q", err, detail)
	}
	return e
}
