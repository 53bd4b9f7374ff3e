package floors_test

import (
	"fmt"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// A backend states its rules once; an adapter asks for the decision of
// each route and applies it on every call.
func ExampleBackend_Decide() {
	rules := floors.Backend{Name: "acme", Ceiling: tenancy.Dedicated, Kinds: map[floors.Kind]floors.KindRule{
		"outbox": {Relations: []string{"table"}, ResolverCountsOnlyWhenTenantAware: true},
	}}
	perTenant := floors.Relation{Role: "table", Name: "events", PerTenant: true}
	for _, aware := range []bool{false, true} {
		d := rules.Decide(floors.Route{Name: "events", Kind: "outbox", TenantAware: aware, Relations: []floors.Relation{perTenant}})
		fmt.Printf("tenant-aware=%v: reaches %s, needs tenant %v, table per tenant %v, tagged %v\n",
			aware, d.Reached, d.NeedsTenant, d.ResolvesPerTenant("table"), d.Tagged)
	}
	// Output:
	// tenant-aware=false: reaches none, needs tenant false, table per tenant false, tagged false
	// tenant-aware=true: reaches namespace, needs tenant true, table per tenant true, tagged true
}
