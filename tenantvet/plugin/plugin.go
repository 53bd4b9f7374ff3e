// Package plugin registers tenantvet's checks as a golangci-lint module
// plugin named "tenantvet" (see docs/tenantvet.md for .custom-gcl.yml).
package plugin

import (
	"strings"

	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis"

	"github.com/tenantwire/tenantwire/tenantvet/checks"
)

func init() { register.Plugin("tenantvet", New) }

// Settings are the plugin's settings in .golangci.yml.
type Settings struct {
	// RebindAllow lists the packages that are boundaries, as -rebind.allow.
	RebindAllow []string `json:"rebind-allow"`
}

type plugin struct{ settings Settings }

// New builds the plugin from its golangci-lint settings; an unknown
// setting is refused, so a misspelt allowlist does not pass silently.
func New(conf any) (register.LinterPlugin, error) {
	s, err := register.DecodeSettings[Settings](conf)
	if err != nil {
		return nil, err
	}
	return &plugin{settings: s}, nil
}

func (p *plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) {
	if err := checks.Rebind.Flags.Set("allow", strings.Join(p.settings.RebindAllow, ",")); err != nil {
		return nil, err
	}
	return checks.All, nil
}

func (p *plugin) GetLoadMode() string { return register.LoadModeTypesInfo }
