package neo4j_test

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRoutedBudgetDefaults: a routed module that leaves MaxClients (or
// MaxConnsPerClient) unset is counted at the bound its pools really use:
// the routing package's default client bound, and DefaultMaxConnsPerClient
// per driver. The worst case is exact: a budget one below it is refused at
// fx.New, one at it wires.
func TestRoutedBudgetDefaults(t *testing.T) {
	pools, err := routing.New(routing.Config[int]{
		Resolve:     func(context.Context, tenancy.ID) (routing.Credentials, error) { return routing.Credentials{}, nil },
		Open:        func(context.Context, routing.Credentials) (int, error) { return 0, nil },
		Close:       func(int) {},
		TenantKeyed: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	clients := pools.MaxClients() // the bound an unset MaxClients gives
	pools.Close()
	for name, c := range map[string]struct {
		rc   routing.Limits
		want int
	}{
		"every default":     {routing.Limits{}, clients * neo4j.DefaultMaxConnsPerClient},
		"default clients":   {routing.Limits{MaxConnsPerClient: 8}, clients * 8},
		"default pool size": {routing.Limits{MaxClients: 10}, 10 * neo4j.DefaultMaxConnsPerClient},
	} {
		t.Run(name, func(t *testing.T) {
			mod := func(budget int) []neo4j.Option {
				return []neo4j.Option{modules.ConnBudget(budget), neo4j.Routed(resolver, c.rc), neo4j.GraphRoute("g", neo4j.RouteConfig{})}
			}
			e := tenancytest.RequireRefused(t, tenancy.CodeConnectionBudgetExceeded, neo4j.Module("m", mod(c.want-1)...))
			if e.Module != "m" || e.Backend != "neo4j" || e.Fix == "" {
				t.Errorf("refusal %+v", e)
			}
			tenancytest.RequireWires(t, neo4j.Module("m", mod(c.want)...))
		})
	}
}
