package postgres_test

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Dedicated tenants spread over two servers: the resolver looks each
// tenant's placement up and returns that server's DSN with the tenant's own
// database. It needs the two test servers (TENANTWIRE_PG_URL and
// TENANTWIRE_PG_URL_2, each naming a database the example's tenant owns),
// so it has no Output line: `go test` compiles it and does not run it.
func ExampleRouted_servers() {
	type placement struct{ server, database string }
	servers := map[string]string{"pg1": os.Getenv("TENANTWIRE_PG_URL"), "pg2": os.Getenv("TENANTWIRE_PG_URL_2")}
	acme := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	globex := tenancy.MustParseID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
	placements := map[tenancy.ID]placement{acme: {"pg1", "t_acme"}, globex: {"pg2", "t_globex"}}
	resolve := func(_ context.Context, t tenancy.ID) (routing.Credentials, error) {
		p, ok := placements[t]
		if !ok {
			return routing.Credentials{}, fmt.Errorf("tenant %s has no placement", t) // fails the call: no fallback
		}
		return routing.Credentials{Endpoint: servers[p.server], Params: map[string]string{"database": p.database}}, nil
	}
	type Order struct {
		Total float64 `json:"total"`
	}
	var (
		orders *postgres.Documents[Order]
		client *postgres.Client
	)
	app := fx.New(fx.NopLogger,
		postgres.Module("shop",
			postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 16, MaxConnsPerClient: 4}}),
			modules.ConnBudget(64), // over both servers together
			modules.RequiredIsolation(tenancy.Dedicated),
			postgres.Document[Order]("orders", postgres.DocumentConfig{Read: naming.Shared("orders"), Write: naming.Shared("orders")}),
		),
		fx.Populate(&orders, fx.Annotate(&client, fx.ParamTags(`name:"shop"`))),
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = app.Stop(ctx) }()
	for _, t := range []tenancy.ID{acme, globex} {
		if err := client.Provision(ctx, t); err != nil { // the tables, in the tenant's database on its server
			fmt.Println(err)
			return
		}
		_, err := orders.Create(tenancy.WithTenant(ctx, t), "o-1", Order{Total: 12.5})
		fmt.Println(t, err)
	}
}
