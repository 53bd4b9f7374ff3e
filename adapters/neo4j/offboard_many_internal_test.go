package neo4j

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestOffboardManyIsOneWalk: OffboardAll of 20 tenants on a tagged route
// sends one relationship delete and one node delete naming all 20, where
// offboarding each tenant sends two statements a tenant, each a walk of
// the database (no index serves a match on any label). Statements are
// counted on the recording driver, since a Community server reports no
// statement count; TestOffboardAllDeletesEveryTenantsGraph runs the same
// offboarding on the real server.
func TestOffboardManyIsOneWalk(t *testing.T) {
	rec := &recorder{}
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		Module("m", withFake("plain", rec), modules.AllowTeardown(), GraphRoute("g", RouteConfig{TenantAware: true})),
		fx.Populate(&tenants))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	ids := make([]tenancy.ID, 20)
	for i := range ids {
		ids[i] = tenancytest.FreshTenant(t)
	}
	if rep := tenants.OffboardAll(context.Background(), ids, migrate.Options{Concurrency: 1}); rep.Done != len(ids) {
		t.Fatalf("offboard: %+v", rep)
	}
	var deletes int
	for _, c := range rec.snapshot() {
		if !strings.Contains(c.cypher, "DELETE") {
			continue
		}
		deletes++
		if got, _ := c.params["tenants"].([]string); len(got) != len(ids) {
			t.Errorf("a delete named %d tenants, want %d: %s", len(got), len(ids), c.cypher)
		}
	}
	if deletes != 2 {
		t.Fatalf("%d delete statements for %d tenants, want 2", deletes, len(ids))
	}
}
