package kafka_test

import (
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// An app's own invoke asking for a producer or the provisioner of a module
// refused for its options gets the module's coded refusal, joined with the
// other modules' violations, wherever the invoke stands: in a module placed
// before the refused one (it runs before the module's check), at the root,
// or after.
func TestRefusalWinsWhateverTheInvokeOrder(t *testing.T) {
	uses := map[string]fx.Option{
		"producer":           tenancytest.Invoke[*kafka.Producer]("orders"),
		"static producer":    tenancytest.Invoke[*kafka.Producer]("audit"),
		"module provisioner": tenancytest.Invoke[*migrate.Runner]("bus"),
	}
	routes := []kafka.Option{
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant("orders.")}),
		kafka.ProducerRoute("audit", kafka.ProducerConfig{Topic: naming.Shared("audit")}),
		kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: "g", Handle: handle, WorkerConfig: shards.WorkerConfig{Tenants: assigned}, Topic: naming.PerTenant("orders.")}),
	}
	// The invokes ask for what a module wired right provides.
	for what, u := range uses {
		if err := fx.New(fx.NopLogger, fx.Module("app", u), kafka.Module("bus", append(routes, kafka.Brokers(nowhere))...)).Err(); err != nil {
			t.Fatalf("%s: the wired module does not provide what the test asks for: %v", what, err)
		}
	}
	// No brokers and no routed client: refused for its options.
	refused := func() fx.Option { return kafka.Module("bus", routes...) }
	floorMiss := func() fx.Option {
		return kafka.Module("other", kafka.Brokers(nowhere), modules.RequiredIsolation(tenancy.Namespace),
			kafka.ProducerRoute("shared", kafka.ProducerConfig{Topic: naming.Shared("shared")}))
	}
	tenancytest.RequireRefusedInAnyOrder(t, tenancy.CodeWiringInvalid, "bus", refused(), uses, floorMiss())
}
