package neo4j_test

import (
	"errors"
	"fmt"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// A route's RouteConfig decides its tier: TenantAware tags every element,
// Database gives each tenant a database of its own. A naming.PerTenant
// prefix that cannot make a valid database name is refused at fx.New, with
// a fix naming the field.
func ExampleGraphRoute() {
	rep, err := modules.DryRun(neo4j.Module("graph",
		neo4j.Connect("bolt://127.0.0.1:7687", nil),
		neo4j.GraphRoute("people", neo4j.RouteConfig{TenantAware: true}),
		neo4j.GraphRoute("orders", neo4j.RouteConfig{Database: naming.PerTenant("orders")}),
		neo4j.GraphRoute("audit", neo4j.RouteConfig{Database: naming.PerTenant("Audit")}),
	))
	for _, row := range rep.Matrix.Rows {
		fmt.Println(row.Route, row.Reached, row.Verdict)
	}
	var e *tenancy.Error
	if errors.As(err, &e) {
		fmt.Println(e.Route, "fix:", e.Fix)
	}
	// Output:
	// people tagged ok
	// orders namespace ok
	// audit namespace wiring_invalid
	// audit fix: set neo4j.RouteConfig.Database to naming.PerTenant(prefix) with a prefix of 1 to 30 characters of lower-case letters, digits, '.' or '-', starting with a letter and not with "system"
}
