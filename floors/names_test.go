package floors_test

import (
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// The tenant space is exactly the separator and 32 lowercase hex digits at
// the end, whatever precedes them (another module's prefix included).
func TestTenantSpaceEdges(t *testing.T) {
	hex := strings.Repeat("f", 31)
	b := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000b").Hex()
	for _, c := range []struct {
		sep string
		in  []string
		out []string
	}{
		{"_", []string{"_" + hex + "0", "_" + hex + "9", "_" + hex + "a", "app_" + hex + "f", "x_" + b},
			[]string{"app", "_" + hex + "g", "_" + hex + "/", "_" + hex + ":", "_" + hex + "`", hex + "f", "-" + hex + "f",
				"app_0A0A0A0A00004000800000000000000A", "_" + hex, "_" + hex + "f_"}},
		{"-", []string{"acme-" + b, "-" + b}, []string{"acme_" + b, "acme" + b, b}},
		{"", []string{b, "tenant_" + b, "orders." + b}, []string{"tenant_" + b[1:], "tenant_" + strings.ToUpper(b), "public"}},
	} {
		sp := floors.TenantSpace{Sep: c.sep}
		for _, s := range c.in {
			if !sp.Contains(s) {
				t.Errorf("sep %q: %q not taken for a per-tenant name", c.sep, s)
			}
		}
		for _, s := range c.out {
			if sp.Contains(s) {
				t.Errorf("sep %q: %q taken for a per-tenant name", c.sep, s)
			}
		}
	}
}

// The refusal names the container, its shape and the option to change.
func TestStaticInTenantSpaceRefusal(t *testing.T) {
	be := floors.Backend{Name: "acme"}
	name := "tenant_" + strings.Repeat("0", 31) + "b"
	e := be.StaticInTenantSpace("m", "r", "static schema", name, floors.TenantSpace{}, "postgres.StaticSchema")
	if e == nil || e.Code != tenancy.CodeStaticNameInTenantSpace || e.Module != "m" || e.Backend != "acme" || e.Route != "r" ||
		!strings.Contains(e.Detail, name) || !strings.Contains(e.Fix, "postgres.StaticSchema") {
		t.Fatalf("refusal %+v", e)
	}
	if e := be.StaticInTenantSpace("m", "", "static schema", "public", floors.TenantSpace{}, "x"); e != nil {
		t.Fatalf("public refused: %v", e)
	}
}

// Reserved names: the framework's prefix in any letter case, nothing else.
func TestReservedNames(t *testing.T) {
	be := floors.Backend{Name: "acme"}
	for _, s := range []string{"tenantwire_migrations", "TenantwireMigration", "TENANTWIRE", "tenantWire_x"} {
		e := be.ReservedName("m", "r", "label", s)
		if e == nil || e.Code != tenancy.CodeReservedName || !strings.Contains(e.Detail, s) || e.Fix == "" {
			t.Errorf("%q: %+v", s, e)
		}
	}
	for _, s := range []string{"", "tenant", "tenantwir", "orders", "my_tenantwire", "tenant_wire"} {
		if e := be.ReservedName("m", "r", "label", s); e != nil {
			t.Errorf("%q refused: %v", s, e)
		}
	}
}
