package modules_test

import (
	"errors"
	"reflect"
	"testing"
	"testing/fstest"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// floorMiss is a second module refused by its floor, which every refusal
// must report alongside the option error.
var floorMiss = memory.Module("shop",
	modules.RequiredIsolation(tenancy.Namespace),
	memory.Document[order]("carts", memory.DocumentConfig{TenantAware: true, Read: naming.Shared("carts")}),
)

// An app's own invoke asking for a refused module's route gets the
// module's coded refusal, wherever it stands: in a module placed before the
// refused one (its invoke runs before the module's check), at the root, or
// after it.
func TestRefusalWinsWhateverTheInvokeOrder(t *testing.T) {
	counter := func() fx.Option {
		return tenancytest.Invoke[*postgres.Counter]("hits")
	}
	documents := func() fx.Option { return tenancytest.Invoke[*postgres.Documents[order]]("") }
	graph := func() fx.Option {
		return tenancytest.Invoke[*neo4j.Graph]("people")
	}
	migrator := func() fx.Option {
		return tenancytest.Invoke[*migrate.Runner]("graph")
	}
	client := func() fx.Option {
		return tenancytest.Invoke[*postgres.Client]("pg")
	}
	// No DSN, Pool or Routed: refused for its options.
	pg := func() fx.Option {
		return postgres.Module("pg",
			postgres.CounterRoute("hits", postgres.CounterConfig{TenantAware: true, Table: naming.Shared("hits")}),
			postgres.Document[order]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")}))
	}
	// A depth over the cap: refused for its options.
	graphMod := func() fx.Option {
		return neo4j.Module("graph", neo4j.GraphRoute("people", neo4j.RouteConfig{TenantAware: true, MaxDepth: 99}),
			modules.Migrations(fstest.MapFS{"0001_people.cypher": {Data: []byte("CREATE INDEX people_name IF NOT EXISTS FOR (n:Person) ON (n.tenant_id, n.name)")}}))
	}
	for name, c := range map[string]struct {
		use, mod func() fx.Option
		module   string
	}{
		"postgres counter":  {counter, pg, "pg"},
		"postgres document": {documents, pg, "pg"},
		"postgres client":   {client, pg, "pg"},
		"neo4j graph":       {graph, graphMod, "graph"},
		"neo4j migrator":    {migrator, graphMod, "graph"},
	} {
		t.Run(name, func(t *testing.T) {
			tenancytest.RequireRefusedInAnyOrder(t, tenancy.CodeWiringInvalid, c.module, c.mod(), map[string]fx.Option{name: c.use()}, floorMiss)
		})
	}
}

type stub struct{}

// A stand-in whose name would break an fx tag, or a repeated one, is left
// out rather than failing fx.New before the check: the refusal still comes
// back coded.
func TestProvideRefusedSkipsUnsafeStandIns(t *testing.T) {
	problem := &tenancy.Error{Code: tenancy.CodeWiringInvalid, Module: "m", Backend: "demo", Fix: "fix it"}
	typ := reflect.TypeFor[*stub]()
	mod := fx.Module("m", modules.ProvideRefused(floors.Module{Name: "m", Backend: backend}, []error{problem},
		modules.Provided{Type: typ, Name: "a"}, modules.Provided{Type: typ, Name: "a"},
		modules.Provided{Type: typ, Name: `b"c`}, modules.Provided{Type: typ}, modules.Provided{}))
	for name, use := range map[string]fx.Option{
		"named":   fx.Invoke(fx.Annotate(func(*stub) {}, fx.ParamTags(`name:"a"`))),
		"unnamed": fx.Invoke(func(*stub) {}),
	} {
		t.Run(name, func(t *testing.T) {
			err := fx.New(fx.NopLogger, fx.Module("app", use), mod).Err()
			var e *tenancy.Error
			if !errors.As(err, &e) || e != problem {
				t.Fatalf("fx.New: %v, want the module's problem", err)
			}
		})
	}
	// With no invoke of the app's, the module's own check reports it, and
	// no stand-in is built.
	if err := fx.New(fx.NopLogger, mod).Err(); tenancy.CodeOf(err) != tenancy.CodeWiringInvalid {
		t.Fatalf("fx.New: %v", err)
	}
}
