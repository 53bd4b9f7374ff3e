package neo4j_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestOffboardVerifierFindsPlantedNodes: a node carrying the tenant
// property, written straight to the server after the teardown (by a
// module offboarded after it), fails Offboard with
// tenant_erasure_incomplete naming the family and route; the tenant stays
// suspended, and once the node is gone the offboard completes.
func TestOffboardVerifierFindsPlantedNodes(t *testing.T) {
	s := testsvc.Neo4j(t)
	d := directTo(t, s)
	label := uniqueLabel(t)
	t.Cleanup(func() { d.removeLabel(label) })
	type planter struct{}
	plant := false
	var r struct {
		fx.In
		Tenants *modules.Tenants
		Graph   *neo4j.Graph `name:"g"`
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		neo4j.Module("graph", connect(s), modules.AllowTeardown(), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true})),
		fx.Provide(func() planter { return planter{} }),
		modules.ProvideTenantState(func(planter) modules.TenantState {
			return modules.TenantState{Module: "zz", Backend: "test", Offboard: func(_ context.Context, id tenancy.ID) error {
				if plant {
					d.query("CREATE (:`"+label+"` {tenant_id: $a})", map[string]any{"a": id.String()})
				}
				return nil
			}}
		}),
		fx.Populate(&r))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	a := tenancytest.FreshTenant(t)
	if _, err := r.Graph.CreateNode(tenancy.WithTenant(context.Background(), a), []string{label}, nil); err != nil {
		t.Fatal(err)
	}
	plant = true
	_, err := r.Tenants.Offboard(context.Background(), a)
	plant = false
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeTenantErasureIncomplete || te.Module != "graph" || te.Route != "g" ||
		!strings.Contains(te.Detail, `family "tagged nodes"`) {
		t.Fatalf("a node planted after the teardown: %v", err)
	}
	if !r.Tenants.Suspended(a) {
		t.Fatal("the tenant must stay suspended")
	}
	if _, err := r.Tenants.Offboard(context.Background(), a); err != nil {
		t.Fatalf("offboard again: %v", err)
	}
}
