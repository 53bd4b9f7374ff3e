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
		ctx, _, err := res.bind(in, "/tenantwire.test.Echo/Whoami")
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

// TestBindDropsTheCallersTenantBaggage: a tenantwire.tenant baggage member
// the caller sent (which otelgrpc extracts into the call's context) is
// gone once the call is bound, with telemetry or without: absent with
// Config.Baggage off, the bound tenant's with it on; other members stay.
func TestBindDropsTheCallersTenantBaggage(t *testing.T) {
	id := tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	other := "0b0b0b0b-0000-4000-8000-00000000000b"
	for _, c := range []struct {
		name string
		tc   *telemetry.Config
		want string
	}{
		{"no telemetry", nil, ""},
		{"baggage off", &telemetry.Config{SpanTenant: telemetry.TenantRaw}, ""},
		{"baggage on", &telemetry.Config{SpanTenant: telemetry.TenantRaw, Baggage: true}, id.String()},
	} {
		res, err := NewResolver(Config{TrustedProxy: true})
		if err != nil {
			t.Fatal(err)
		}
		if c.tc != nil {
			if res.tel, err = telemetry.New(*c.tc); err != nil {
				t.Fatal(err)
			}
		}
		sent, err := baggage.Parse(telemetry.BaggageTenant + "=" + other + ",keep=1")
		if err != nil {
			t.Fatal(err)
		}
		in := baggage.ContextWithBaggage(metadata.NewIncomingContext(context.Background(), metadata.Pairs(res.key, id.String())), sent)
		ctx, _, err := res.bind(in, "/tenantwire.test.Echo/Whoami")
		if err != nil {
			t.Fatal(err)
		}
		b := baggage.FromContext(ctx)
		if v := b.Member(telemetry.BaggageTenant).Value(); v != c.want || b.Member("keep").Value() != "1" {
			t.Errorf("%s: baggage %q, want tenantwire.tenant=%q and keep=1", c.name, b.String(), c.want)
		}
	}
}
