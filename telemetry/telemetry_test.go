package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

var tenantA = tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")

// TestNilRouteAllocatesNothing: without telemetry a route holds a nil
// *Route and a module a nil *Unit, and a whole call or unit of work
// through them (start, release, refusal) takes no allocation.
func TestNilRouteAllocatesNothing(t *testing.T) {
	var tel *telemetry.Telemetry
	r := tel.Route(telemetry.RouteInfo{Backend: "redis", Module: "m", Route: "r"})
	u := tel.Unit("postgres", "m")
	if r != nil || u != nil {
		t.Fatal("a nil Telemetry built a Route or a Unit")
	}
	ctx, release, refused := context.Background(), func() {}, errors.New("refused")
	a := testing.AllocsPerRun(1000, func() {
		_, call := r.Start(ctx, tenantA)
		call.Done(release)()
		_, call = r.StartLinked(ctx, tenantA, nil)
		_ = call.Fail(refused)
		call.End(nil)
		_ = tel.Inject(ctx, nil)
		_, unit := u.Start(ctx, tenantA)
		unit.End(telemetry.OutcomeRollback, refused)
	})
	if a != 0 {
		t.Fatalf("a call without telemetry allocates %v times, want 0", a)
	}
}

func TestErrorCode(t *testing.T) {
	coded := fmt.Errorf("wrapped: %w", &tenancy.Error{Code: tenancy.CodeTenantSuspended})
	for _, c := range []struct {
		err  error
		want string
	}{
		{coded, "tenant_suspended"},
		{tenancy.Unbound(), "tenant_unbound"},
		{context.DeadlineExceeded, telemetry.CodeCanceled},
		{errors.New("driver"), telemetry.CodeUncoded},
	} {
		if got := telemetry.ErrorCode(c.err); got != c.want {
			t.Errorf("ErrorCode(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestTenantPolicies: raw writes the id, a hash hides it behind the key
// (two keys, two values; one key, one value per tenant), omit leaves it
// out; a tenant label on every tenant and an empty hash key are refused.
func TestTenantPolicies(t *testing.T) {
	attr := func(p telemetry.TenantPolicy) (string, bool) {
		tel, err := telemetry.New(telemetry.Config{SpanTenant: p})
		if err != nil {
			t.Fatal(err)
		}
		kv, ok := tel.SpanTenant(tenantA)
		return kv.Value.AsString(), ok
	}
	if v, ok := attr(telemetry.TenantRaw); !ok || v != tenantA.String() {
		t.Errorf("raw: %q %v", v, ok)
	}
	if _, ok := attr(telemetry.TenantOmit); ok {
		t.Error("omit wrote the tenant")
	}
	h1, _ := attr(telemetry.TenantHash([]byte("key-one-key-one-")))
	h1again, _ := attr(telemetry.TenantHash([]byte("key-one-key-one-")))
	h2, _ := attr(telemetry.TenantHash([]byte("key-two-key-two-")))
	if h1 != h1again || h1 == h2 || len(h1) != 32 || h1 == tenantA.String() {
		t.Errorf("hash: %q %q %q", h1, h1again, h2)
	}
	for _, cfg := range []telemetry.Config{
		{MetricTenant: telemetry.TenantRaw},
		{SpanTenant: telemetry.TenantHash(nil)},
	} {
		if _, err := telemetry.New(cfg); !errors.Is(err, tenancy.CodeWiringInvalid) {
			t.Errorf("New(%+v) = %v, want wiring_invalid", cfg, err)
		}
	}
}

// TestUnitNeedsATracer: telemetry with metrics only builds no unit
// instruments, since a unit is a span and nothing else.
func TestUnitNeedsATracer(t *testing.T) {
	tel, err := telemetry.New(telemetry.Config{MeterProvider: noop.NewMeterProvider()})
	if err != nil {
		t.Fatal(err)
	}
	if tel.Unit("postgres", "m") != nil {
		t.Fatal("telemetry without a TracerProvider built unit instruments")
	}
}
