package neo4j_test

import (
	"context"
	"testing"
	"time"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// The real driver path: building and starting the module dials nothing,
// and a call against a port where no server listens fails with an error
// (no panic, no hang past its deadline).
func TestRealDriverDialsLazilyAndFailsCleanly(t *testing.T) {
	var g *neo4j.Graph
	app := fx.New(fx.NopLogger,
		neo4j.Module("m", neo4j.Connect("bolt://127.0.0.1:1", drv.BasicAuth("u", "p", "")),
			neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true})),
		fx.Invoke(fx.Annotate(func(v *neo4j.Graph) { g = v }, fx.ParamTags(`name:"g"`))))
	if err := app.Start(context.Background()); err != nil {
		t.Fatalf("start dialled or failed: %v", err)
	}
	defer func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(tenancy.WithTenant(context.Background(), tenancytest.TenantA), time.Second)
	defer cancel()
	if _, err := g.GetNode(ctx, "4:x:1"); err == nil {
		t.Fatal("a call with no server succeeded")
	}
}
