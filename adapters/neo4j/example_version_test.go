package neo4j_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// RequiredVersion is checked at fx.New against the module's migrations,
// and a module whose tenants have databases of their own needs a
// TenantRegistry for the start-up check (app.Start then refuses while a
// registered tenant is behind; calls for a stale tenant are refused).
func ExampleRequiredVersion() {
	files := fstest.MapFS{"0001_order_code.cypher": {Data: []byte(
		"CREATE CONSTRAINT order_code IF NOT EXISTS FOR (n:Order) REQUIRE n.code IS UNIQUE")}}
	resolve := func(context.Context, tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{}, fmt.Errorf("no tenant resolves in this example")
	}
	build := func(opts ...neo4j.Option) error {
		opts = append(opts, neo4j.Routed(resolve, routing.Limits{}),
			neo4j.GraphRoute("orders", neo4j.RouteConfig{}), modules.Migrations(files))
		return fx.New(fx.NopLogger, neo4j.Module("graph", opts...)).Err()
	}
	fmt.Println("version 2 of 1:", tenancy.CodeOf(build(modules.RequiredVersion(2), modules.TenantRegistry(migrate.NewMemoryRegistry()))))
	fmt.Println("no registry:", tenancy.CodeOf(build(modules.RequiredVersion(1))))
	fmt.Println("with registry:", build(modules.RequiredVersion(1), modules.TenantRegistry(migrate.NewMemoryRegistry())))
	// Output:
	// version 2 of 1: wiring_invalid
	// no registry: wiring_invalid
	// with registry: <nil>
}
