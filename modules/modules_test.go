package modules_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

var backend = floors.Backend{Name: "demo", Ceiling: tenancy.Dedicated, Kinds: map[floors.Kind]floors.KindRule{
	"document": {}, "stream": {},
}}

func module(name string, floor tenancy.Tier, routes ...floors.Route) fx.Option {
	return fx.Module(name, modules.Provide(floors.Module{Name: name, Backend: backend, Floor: floor, Routes: routes}))
}

func TestEnforceRefusesBeforeAnyOnStart(t *testing.T) {
	started := false
	app := fx.New(
		fx.NopLogger,
		fx.Invoke(func(lc fx.Lifecycle) {
			lc.Append(fx.Hook{OnStart: func(context.Context) error { started = true; return nil }})
		}),
		module("orders", tenancy.Namespace, floors.Route{Name: "orders", Kind: "document", TenantAware: true}),
	)
	var coded *tenancy.Error
	if !errors.As(app.Err(), &coded) || coded.Code != "demo_tenancy_validation_failed" || coded.Route != "orders" {
		t.Fatalf("app.Err() = %v, want a coded floor miss", app.Err())
	}
	if err := app.Start(context.Background()); err == nil {
		t.Fatal("a refused app started")
	}
	if started {
		t.Fatal("an OnStart hook of a refused app ran")
	}
}

func TestEveryModuleViolationJoined(t *testing.T) {
	app := fx.New(
		fx.NopLogger,
		module("a", tenancy.Namespace, floors.Route{Name: "a1", Kind: "document"}),
		module("b", tenancy.None, floors.Route{Name: "b1", Kind: "document", Origin: tenancy.Raw}),
		module("c", tenancy.None, floors.Route{Name: "c1", Kind: "stream", TenantAware: true}),
		modules.Worker(floors.Worker{Name: "drain", Module: "c", Route: "c1"}),
	)
	got := tenancy.Codes(app.Err())
	want := []tenancy.Code{"demo_tenancy_validation_failed", tenancy.CodeStatementOriginFloor, tenancy.CodeTenantGlobalRequired}
	if !slices.Equal(got, want) {
		t.Fatalf("codes %v, want %v (err: %v)", got, want, app.Err())
	}
}

func TestUserWorkerAloneIsChecked(t *testing.T) {
	err := fx.New(fx.NopLogger, modules.Worker(floors.Worker{Name: "mine", Module: "nowhere", Route: "x"})).Err()
	if !errors.Is(err, tenancy.CodeWorkerRouteUnknown) {
		t.Fatalf("err = %v", err)
	}
}

func TestLiveMatrixInjectable(t *testing.T) {
	var m floors.Matrix
	app := fx.New(
		fx.NopLogger,
		module("a", tenancy.Tagged, floors.Route{Name: "a1", Kind: "document", TenantAware: true}),
		module("b", tenancy.None, floors.Route{Name: "b1", Kind: "stream"}),
		fx.Invoke(func(l modules.Live) { m = l.Matrix() }),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if len(m.Rows) != 2 || m.Rows[0].Reached != tenancy.Tagged || m.Rows[1].Verdict != floors.VerdictOK {
		t.Fatalf("matrix %+v", m.Rows)
	}
}

func TestOneOptionBuildsManyApps(t *testing.T) {
	opt := module("a", tenancy.Tagged, floors.Route{Name: "a1", Kind: "document"})
	for range 2 {
		if err := fx.New(fx.NopLogger, opt).Err(); !errors.Is(err, tenancy.Code("demo_tenancy_validation_failed")) {
			t.Fatalf("second build skipped the check: %v", err)
		}
	}
}
