package plugin

import (
	"testing"

	"github.com/golangci/plugin-module-register/register"

	"github.com/tenantwire/tenantwire/tenantvet/checks"
)

func TestRegistered(t *testing.T) {
	newPlugin, err := register.GetPlugin("tenantvet")
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPlugin(map[string]any{"rebind-allow": []string{"example.com/queue/..."}})
	if err != nil {
		t.Fatal(err)
	}
	as, err := p.BuildAnalyzers()
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != len(checks.All) || p.GetLoadMode() != register.LoadModeTypesInfo {
		t.Fatalf("got %d analyzers, load mode %q", len(as), p.GetLoadMode())
	}
	if got := checks.Rebind.Flags.Lookup("allow").Value.String(); got != "example.com/queue/..." {
		t.Fatalf("rebind.allow = %q", got)
	}
	if err := checks.Rebind.Flags.Set("allow", ""); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownSettingRefused(t *testing.T) {
	if _, err := New(map[string]any{"rebind-alow": []string{"x"}}); err == nil {
		t.Fatal("a misspelt setting was accepted")
	}
}
