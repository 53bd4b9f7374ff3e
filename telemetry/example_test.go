package telemetry_test

import (
	"fmt"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// A keyed hash puts the same value on every span of one tenant, and one
// nobody without the key can tie to the tenant.
func ExampleTenantHash() {
	tel, err := telemetry.New(telemetry.Config{
		TracerProvider: noop.NewTracerProvider(), // the app's SDK provider in a real service
		SpanTenant:     telemetry.TenantHash([]byte("a secret key from the app's vault")),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	kv, _ := tel.SpanTenant(tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7"))
	fmt.Println(kv.Key, len(kv.Value.AsString()), "hex digits")
	// Output:
	// tenantwire.tenant 32 hex digits
}

// A tenant metric label is refused unless it is on for a bounded set of
// tenants: every tenant would multiply every route's series.
func ExampleNew_unboundedTenantLabel() {
	_, err := telemetry.New(telemetry.Config{MetricTenant: telemetry.TenantRaw})
	fmt.Println(tenancy.CodeOf(err))
	// Output:
	// wiring_invalid
}

// Without telemetry a route holds a nil *Route: its calls cost a nil
// check and record nothing.
func ExampleTelemetry_Route() {
	var tel *telemetry.Telemetry // the app gave none
	r := tel.Route(telemetry.RouteInfo{Backend: "redis", Module: "cache", Route: "sessions", Kind: "cache", Reached: tenancy.Tagged})
	fmt.Println(r == nil)
	// Output:
	// true
}
