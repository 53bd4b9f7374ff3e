package postgres_test

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Tenants share the orders table; row-level security keeps each call to
// its tenant's rows even if a statement lost its predicate. It needs the
// test server (TENANTWIRE_PG_URL), so it has no Output line: `go test`
// compiles it and does not run it.
func ExampleRowSecurity() {
	type Order struct {
		Total float64 `json:"total"`
	}
	var (
		orders  *postgres.Documents[Order]
		tenants *modules.Tenants
	)
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		postgres.Module("shop", postgres.Connect(os.Getenv("TENANTWIRE_PG_URL")),
			postgres.RowSecurity(), // provisioning creates the policy; every call sets its tenant
			postgres.Document[Order]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")}),
		),
		fx.Populate(&orders, &tenants),
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = app.Stop(ctx) }()
	acme := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	if _, err := tenants.Provision(ctx, acme); err != nil {
		fmt.Println(err) // postgres_row_security_owner when the module's user is under the policy
		return
	}
	n, err := orders.Count(tenancy.WithTenant(ctx, acme), document.Query{})
	fmt.Println(n, err)
}
