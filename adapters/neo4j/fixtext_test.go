package neo4j_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func noCredentials(context.Context, tenancy.ID) (routing.Credentials, error) {
	return routing.Credentials{}, errors.New("no tenant is served")
}

// Every option refusal says exactly what to change, naming the option or
// the RouteConfig field.
func TestOptionRefusalsSayWhatToChange(t *testing.T) {
	for name, c := range map[string]struct {
		opt neo4j.Option
		fix string
		// routed: opt is the module's source; the others get the graph's.
		routed bool
	}{
		"route name":    {neo4j.GraphRoute(`g"x`, neo4j.RouteConfig{}), "rename the route: 1 to 64 letters", false},
		"depth":         {neo4j.GraphRoute("g", neo4j.RouteConfig{MaxDepth: -1}), "set neo4j.RouteConfig.MaxDepth to a depth from 1 to 64, or leave it 0", false},
		"raw depth":     {neo4j.RawCypherRoute("raw", neo4j.RouteConfig{MaxDepth: 3}), "leave neo4j.RouteConfig.MaxDepth 0 on a RawCypherRoute", false},
		"bad prefix":    {neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.PerTenant("Acme")}), "set neo4j.RouteConfig.Database to naming.PerTenant(prefix) with a prefix of 1 to 30 characters of lower-case letters", false},
		"system prefix": {neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.PerTenant("system")}), `not with "system"`, false},
		"max drivers":   {neo4j.Routed(noCredentials, routing.Limits{MaxClients: -1}), "set routing.Limits.MaxClients to a positive value, or leave it 0 for the default", true},
		"conns":         {neo4j.Routed(noCredentials, routing.Limits{MaxConnsPerClient: -1}), "set routing.Limits.MaxConnsPerClient to a positive value, or leave it 0 for the default", true},
	} {
		t.Run(name, func(t *testing.T) {
			opts := []neo4j.Option{c.opt}
			if !c.routed {
				opts = append(opts, modules.FromGraph())
			}
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, neo4j.Module("m", opts...))
			if !strings.Contains(e.Fix, c.fix) {
				t.Errorf("fix %q lacks %q", e.Fix, c.fix)
			}
		})
	}
}
