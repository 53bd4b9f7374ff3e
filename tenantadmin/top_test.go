package tenantadmin_test

import (
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// GET /tenants/top answers every route's heavy hitters from the app's
// telemetry: the tenant with most calls first, with its error bound;
// without telemetry.Config.Top it answers enabled false; it takes no
// parameter.
func TestTopTenantsEndpoint(t *testing.T) {
	f := newFixtureWith(t, []fx.Option{telemetry.Provide(telemetry.Config{Top: &telemetry.TopConfig{Size: 4}})})
	ctx := context.Background()
	for _, id := range []tenancy.ID{a, b} {
		if _, err := f.tenants.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []tenancy.ID{a, a, a, b} {
		if _, err := f.orders.Create(tenancy.WithTenant(ctx, id), "o"+string(rune('0'+i)), order{"anvil"}); err != nil {
			t.Fatal(err)
		}
	}
	st, body := f.do("GET", f.operator+"/tenants/top")
	if st != 200 || body["enabled"] != true {
		t.Fatalf("top: %d %v", st, body)
	}
	var orders map[string]any
	for _, r := range body["routes"].([]any) {
		if m := r.(map[string]any); m["module"] == "pg" && m["route"] == "orders" {
			orders = m["current"].(map[string]any)
		}
	}
	if orders == nil {
		t.Fatalf("no pg orders route in %v", body)
	}
	ts := orders["tenants"].([]any)
	first := ts[0].(map[string]any)
	if len(ts) != 2 || first["tenant"] != a.String() || first["calls"] != float64(3) || first["over"] != float64(0) || orders["calls"] != float64(4) {
		t.Fatalf("orders' top tenants: %v", orders)
	}
	if st, body := f.do("GET", f.operator+"/tenants/top?limit=1"); st != 400 {
		t.Errorf("a parameter: %d %v", st, body)
	}

	plain := newFixture(t)
	if st, body := plain.do("GET", plain.operator+"/tenants/top"); st != 200 || body["enabled"] != false {
		t.Errorf("without Config.Top: %d %v", st, body)
	}
}
