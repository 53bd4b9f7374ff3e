package postgres_test

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// A document route at namespace: a schema per tenant for every relation.
// The example needs a PostgreSQL server (TENANTWIRE_PG_URL), so it has no
// Output line: `go test` compiles it and does not run it.
func Example() {
	type Order struct {
		Customer string  `json:"customer"`
		Total    float64 `json:"total"`
	}
	var (
		orders *postgres.Documents[Order]
		client *postgres.Client
	)
	app := fx.New(fx.NopLogger,
		postgres.Module("shop",
			postgres.Connect(os.Getenv("TENANTWIRE_PG_URL")),
			modules.RequiredIsolation(tenancy.Namespace),
			postgres.Document[Order]("orders", postgres.DocumentConfig{
				Read:  naming.PerTenant("orders"),
				Write: naming.PerTenant("orders"),
			}),
		),
		fx.Populate(&orders, fx.Annotate(&client, fx.ParamTags(`name:"shop"`))),
	)
	if err := app.Err(); err != nil {
		fmt.Println(err) // a coded *tenancy.Error; no server was contacted
		return
	}
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = app.Stop(ctx) }()

	acme := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	if err := client.Provision(ctx, acme); err != nil { // creates acme's schema and tables
		fmt.Println(err)
		return
	}
	asAcme := tenancy.WithTenant(ctx, acme)
	if _, err := orders.Create(asAcme, "o-1", Order{Customer: "Wile E.", Total: 12.5}); err != nil {
		fmt.Println(err)
		return
	}
	got, err := orders.Get(asAcme, "o-1")
	fmt.Println(got.Value.Customer, err)
}
