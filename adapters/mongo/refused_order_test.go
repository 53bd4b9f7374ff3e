package mongo_test

import (
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// An app's own invoke asking for any route or the provisioner of a module
// refused for its options gets the module's coded refusal, joined with the
// other modules' violations, wherever the invoke stands: in a module placed
// before the refused one (it runs before the module's check), at the root,
// or after. fx.New connects to nothing: no server is needed.
func TestRefusalWinsWhateverTheInvokeOrder(t *testing.T) {
	uses := map[string]fx.Option{
		"document":    tenancytest.Invoke[*mongo.Documents[order]](""),
		"search":      tenancytest.Invoke[*mongo.Search]("s"),
		"counter":     tenancytest.Invoke[*mongo.Counter]("n"),
		"outbox":      tenancytest.Invoke[*mongo.Outbox]("o"),
		"raw_filter":  tenancytest.Invoke[*mongo.RawFilter]("r"),
		"provisioner": tenancytest.Invoke[*mongo.Provisioner]("db"),
	}
	// Every kind the rules know is asked for: a new kind needs its line.
	for kind := range mongo.Rules().Kinds {
		if uses[string(kind)] == nil {
			t.Fatalf("kind %s: no invoke asks for its route", kind)
		}
	}
	routes := []mongo.Option{
		mongo.Database("app"),
		mongo.Document[order]("orders", mongo.RouteConfig{Collection: naming.Shared("orders")}),
		mongo.SearchRoute("s", mongo.RouteConfig{Collection: naming.Shared("s")}),
		mongo.CounterRoute("n", mongo.RouteConfig{Collection: naming.Shared("n")}),
		mongo.OutboxRoute("o", mongo.RouteConfig{Collection: naming.Shared("o")}),
		mongo.RawFilterRoute("r", mongo.RouteConfig{Collection: naming.Shared("r")}),
	}
	// The invokes ask for what a module wired right provides.
	for what, u := range uses {
		if err := fx.New(fx.NopLogger, fx.Module("app", u), mongo.Module("db", append(routes, routed)...)).Err(); err != nil {
			t.Fatalf("%s: the wired module does not provide what the test asks for: %v", what, err)
		}
	}
	// A routed client without a resolver: refused for its options.
	refused := func() fx.Option {
		return mongo.Module("db", append(routes, mongo.Routed(nil, mongo.RoutedConfig{}))...)
	}
	floorMiss := func() fx.Option {
		return mongo.Module("other", mongo.Database("app"), modules.RequiredIsolation(tenancy.Namespace),
			mongo.CounterRoute("tagged", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("hits")}))
	}
	tenancytest.RequireRefusedInAnyOrder(t, tenancy.CodeWiringInvalid, "db", refused(), uses, floorMiss())
}
