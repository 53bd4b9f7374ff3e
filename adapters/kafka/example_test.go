package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"testing/fstest"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Routes are declared with a config struct: a static topic (none), a
// topic per tenant (namespace) and a consumer sharded over the per-tenant
// topics. The dry run checks the wiring without dialing a broker.
func Example() {
	bill := func(context.Context, kafkago.Message) error { return nil }
	assigned := func(context.Context) ([]tenancy.ID, error) { return nil, nil }
	rep, err := modules.DryRun(kafka.Module("events",
		kafka.Brokers("127.0.0.1:9092"),
		kafka.ProducerRoute("audit", kafka.ProducerConfig{Topic: naming.Shared("audit")}),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant("orders."), Partitions: 3}),
		kafka.Consumer("orders-in", kafka.ConsumerConfig{
			Topic: naming.PerTenant("orders."), Group: "billing", Handle: bill, WorkerConfig: shards.WorkerConfig{Tenants: assigned},
		}),
	))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range rep.Matrix.Rows {
		fmt.Println(row.Route, row.Reached, row.Verdict)
	}
	// Output:
	// audit none ok
	// orders namespace ok
	// orders-in namespace ok
}

// ConnBudget refuses a routed module whose clients could open more
// connections than the budget: MaxClients × MaxConnsPerClient.
func ExampleConnBudget() {
	resolve := func(context.Context, tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{}, fmt.Errorf("no tenant resolves in this example")
	}
	rep, _ := modules.DryRun(kafka.Module("events",
		kafka.Routed(resolve, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 32, MaxConnsPerClient: 8}}),
		modules.ConnBudget(200),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared("orders")}),
	))
	for _, err := range rep.Errors {
		fmt.Println(tenancy.CodeOf(err))
	}
	// Output:
	// connection_budget_exceeded
}

// RequiredVersion needs the module's Migrations (a version above the
// newest step is refused) and a TenantRegistry for the start-up check;
// app.Start then refuses while a registered tenant is behind, and a
// Produce for a tenant whose topics carry an older configuration is
// refused before it writes.
func ExampleRequiredVersion() {
	steps := fstest.MapFS{"0001_retention.json": {Data: []byte(`{"configs": {"retention.ms": "86400000"}}`)}}
	rep, _ := modules.DryRun(kafka.Module("events",
		kafka.Brokers("127.0.0.1:9092"),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant("orders.")}),
		modules.Migrations(steps),
		modules.RequiredVersion(2),
	))
	for _, err := range rep.Errors {
		var te *tenancy.Error
		if errors.As(err, &te) {
			fmt.Println(te.Code+":", te.Detail)
		}
	}
	// Output:
	// wiring_invalid: RequiredVersion 2 is above the newest migration (1)
	// wiring_invalid: RequiredVersion needs to know the module's tenants at start
}
