package postgres_test

import (
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestLiveMatrix: every route appears in the live matrix with the tier its
// wiring reaches, without any server.
func TestLiveMatrix(t *testing.T) {
	var m floors.Matrix
	app := fx.New(fx.NopLogger,
		postgres.Module("pg", postgres.Connect(nowhere),
			postgres.Document[item]("tagged", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("t"), Write: naming.Shared("t")}),
			postgres.Document[int]("ns", postgres.DocumentConfig{Read: naming.PerTenant("n"), Write: naming.PerTenant("n")}),
			postgres.CounterRoute("shared", postgres.CounterConfig{Table: naming.Shared("c")}),
			postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true}),
		),
		postgres.Module("routed", postgres.Routed(resolveNowhere, postgres.RoutedConfig{}),
			postgres.CounterRoute("quota", postgres.CounterConfig{Table: naming.Shared("q")})),
		fx.Invoke(func(l modules.Live) { m = l.Matrix() }),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]tenancy.Tier{"tagged": tenancy.Tagged, "ns": tenancy.Namespace, "shared": tenancy.None, "dyn": tenancy.Namespace, "quota": tenancy.Dedicated}
	for _, r := range m.Rows {
		if w, ok := want[r.Route]; !ok || r.Reached != w || r.Backend != "postgres" {
			t.Errorf("row %+v, want reached %s", r, w)
		}
		delete(want, r.Route)
	}
	if len(want) != 0 {
		t.Errorf("routes missing from the matrix: %v", want)
	}
}

// TestTwoModulesSameDocumentType: NamedOnly lets two modules hold
// document routes of one type; each stays reachable by route name.
func TestTwoModulesSameDocumentType(t *testing.T) {
	docs := func(mod, route string, opts ...postgres.Option) fx.Option {
		return postgres.Module(mod, append(opts, postgres.Connect(nowhere),
			postgres.Document[item](route, postgres.DocumentConfig{Read: naming.Shared(route), Write: naming.Shared(route)}))...)
	}
	var a, b *postgres.Documents[item]
	app := fx.New(fx.NopLogger, docs("one", "a", postgres.NamedOnly()), docs("two", "b"),
		named("a", &a), named("b", &b), fx.Populate(&b))
	if err := app.Err(); err != nil || a == nil || b == nil || a == b {
		t.Fatalf("two modules: %v", err)
	}
}
