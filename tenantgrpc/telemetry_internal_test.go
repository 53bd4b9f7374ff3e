package tenantgrpc

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/baggage"
	"google.golang.org/grpc/metadata"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestBindAddsTheTenantToBaggageOnlyIfAsked: a bound call's context gets
// the tenant as baggage (for the services it calls) only with
// telemetry.Config.Baggage, and under the span policy.
func TestBindAddsTheTenantToBaggageOnlyIfAsked(t *testing.T) {
	id := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	for _, asked := range []bool{false, true} {
		res, err := NewResolver(Config{TrustedProxy: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.tel, err = telemetry.New(telemetry.Config{SpanTenant: telemetry.TenantRaw, Baggage: asked}); err != nil {
			t.Fatal(err)
		}
		in := metadata.NewIncomingContext(context.Background(), metadata.Pairs(res.key, id.String()))
		ctx, err := res.bind(in)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := tenancy.FromContext(ctx); got != id {
			t.Fatalf("bound %s", got)
		}
		v := baggage.FromContext(ctx).Member(telemetry.BaggageTenant).Value()
		if asked && v != id.String() || !asked && v != "" {
			t.Errorf("asked %v: baggage %q", asked, v)
		}
	}
}
