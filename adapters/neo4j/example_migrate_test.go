package neo4j_test

import (
	"fmt"
	"testing/fstest"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// A tagged module's uniqueness constraint must include the tenant
// property: over one property it would span every tenant, and fx.New
// refuses it before anything connects.
func ExampleMigrations() {
	build := func(constraint string) error {
		files := fstest.MapFS{"0001_order_code.cypher": {Data: []byte(constraint)}}
		return fx.New(fx.NopLogger, neo4j.Module("graph",
			neo4j.Connect("bolt://127.0.0.1:7687", nil),
			neo4j.GraphRoute("orders", neo4j.RouteConfig{TenantAware: true}),
			modules.Migrations(files),
		)).Err()
	}
	err := build("CREATE CONSTRAINT order_code IF NOT EXISTS FOR (n:Order) REQUIRE n.code IS UNIQUE")
	fmt.Println("one property:", tenancy.CodeOf(err))
	err = build("CREATE CONSTRAINT order_code IF NOT EXISTS FOR (n:Order) REQUIRE (n.tenant_id, n.code) IS UNIQUE")
	fmt.Println("with tenant_id:", err)
	// Output:
	// one property: wiring_invalid
	// with tenant_id: <nil>
}
