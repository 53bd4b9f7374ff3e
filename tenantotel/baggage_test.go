package tenantotel_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/baggage"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenanthttp"
	"github.com/tenantwire/tenantwire/tenantotel"
)

// TestBaggageOnlyIfAsked: the bound tenant goes into the request's
// baggage (for downstream services) only with Config.Baggage, under the
// span policy (here a keyed hash, so the id itself never leaves).
func TestBaggageOnlyIfAsked(t *testing.T) {
	key := []byte("0123456789abcdef")
	hashed, _ := telemetry.New(telemetry.Config{SpanTenant: telemetry.TenantHash(key)})
	want, _ := hashed.SpanTenant(tenantA)
	for _, asked := range []bool{false, true} {
		var srv *tenanthttp.Server
		app := fx.New(fx.NopLogger,
			tenantotel.Module(tenantotel.Config{Telemetry: telemetry.Config{SpanTenant: telemetry.TenantHash(key), Baggage: asked}}),
			tenanthttp.Module(tenanthttp.Config{TrustedProxy: true}),
			tenanthttp.Route("GET /b", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, baggage.FromContext(r.Context()).Member(telemetry.BaggageTenant).Value())
			})),
			fx.Populate(&srv))
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", "/b", nil)
		req.Header.Set(tenanthttp.DefaultHeader, tenantA.String())
		rec := httptest.NewRecorder()
		srv.TenantHandler().ServeHTTP(rec, req)
		got := rec.Body.String()
		switch {
		case !asked && got != "":
			t.Errorf("baggage without asking: %q", got)
		case asked && got != want.Value.AsString():
			t.Errorf("baggage %q, want the tenant's hash %q", got, want.Value.AsString())
		}
	}
}
