package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

// A unit of work: an order and its outbox event commit together, or
// neither does. Every route of the client called with the unit's ctx runs
// in its transaction. The example needs a PostgreSQL server
// (TENANTWIRE_PG_URL), so it has no Output line: `go test` compiles it
// and does not run it.
func ExampleClient_InTx() {
	type Order struct {
		Total float64 `json:"total"`
	}
	var (
		orders *postgres.Documents[Order]
		events *postgres.Outbox
		client *postgres.Client
	)
	app := fx.New(fx.NopLogger,
		postgres.Module("shop",
			postgres.Connect(os.Getenv("TENANTWIRE_PG_URL")),
			postgres.Document[Order]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")}),
			postgres.OutboxRoute("events", postgres.OutboxConfig{Table: naming.Shared("outbox")}),
		),
		fx.Populate(&orders, fx.Annotate(&events, fx.ParamTags(`name:"events"`)), fx.Annotate(&client, fx.ParamTags(`name:"shop"`))),
	)
	if err := app.Err(); err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	acme := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	if err := client.Provision(ctx, acme); err != nil {
		fmt.Println(err)
		return
	}
	asAcme := tenancy.WithTenant(ctx, acme)
	errDeclined := errors.New("payment declined")
	err := client.InTx(asAcme, func(ctx context.Context) error {
		if _, err := orders.Create(ctx, "o-1", Order{Total: 12.5}); err != nil {
			return err
		}
		if err := events.Write(ctx, outbox.Message{Topic: "orders", Payload: []byte("o-1 placed")}); err != nil {
			return err
		}
		return errDeclined // neither the order nor its event is kept
	})
	_, gerr := orders.Get(asAcme, "o-1")
	fmt.Println(errors.Is(err, errDeclined), gerr)
}
