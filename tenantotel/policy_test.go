package tenantotel_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/baggage"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
	"github.com/tenantwire/tenantwire/tenantotel"
)

var policyKey = []byte("0123456789abcdef")

// boundaryApp serves GET /items/{id} on the tenant listener, behind a
// Wrap middleware that copies the request (as authentication does), and
// GET /tenants/{id}/status on the operator listener, traced into rec.
// Each handler answers the tenantwire.tenant and keep baggage members it
// sees.
func boundaryApp(t *testing.T, rec *tracetest.SpanRecorder, tc telemetry.Config) *tenanthttp.Server {
	t.Helper()
	seen := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := baggage.FromContext(r.Context())
		fmt.Fprintf(w, "%s|%s", b.Member(telemetry.BaggageTenant).Value(), b.Member("keep").Value())
	})
	type key struct{}
	var srv *tenanthttp.Server
	app := fx.New(fx.NopLogger,
		tenantotel.Module(tenantotel.Config{Telemetry: tc, SpanProcessors: []sdktrace.SpanProcessor{rec}, NoMetricsRoute: true}),
		tenanthttp.Module(tenanthttp.Config{TrustedProxy: true, Wrap: []func(http.Handler) http.Handler{func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), key{}, "principal")))
			})
		}}}),
		tenanthttp.Route("GET /items/{id}", tenanthttp.Tenant, seen),
		tenanthttp.Route("GET /tenants/{id}/status", tenanthttp.Operator, seen),
		fx.Populate(&srv))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestRequestSpanNamesTheRouteNotTheTenantPath: on both listeners the
// request span carries the route pattern (http.route, also its name),
// even behind a middleware that copies the request; under the omit and
// hash span policies no attribute holds the raw tenant id a path names,
// and url.path is recorded only under TenantRaw.
func TestRequestSpanNamesTheRouteNotTheTenantPath(t *testing.T) {
	for _, pol := range []telemetry.TenantPolicy{telemetry.TenantOmit, telemetry.TenantHash(policyKey), telemetry.TenantRaw} {
		rec := tracetest.NewSpanRecorder()
		srv := boundaryApp(t, rec, telemetry.Config{SpanTenant: pol})
		for _, c := range []struct {
			h             http.Handler
			path, pattern string
		}{
			{srv.TenantHandler(), "/items/" + tenantB.String(), "GET /items/{id}"},
			{srv.OperatorHandler(), "/tenants/" + tenantB.String() + "/status", "GET /tenants/{id}/status"},
		} {
			req := httptest.NewRequest("GET", c.path, nil)
			req.Host = "localhost" // the operator listener answers its own names only
			req.Header.Set(tenanthttp.DefaultHeader, tenantB.String())
			w := httptest.NewRecorder()
			c.h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", c.path, w.Code, w.Body)
			}
			spans := rec.Ended()
			s := spans[len(spans)-1]
			a := attrs(s)
			if s.SpanKind() != trace.SpanKindServer || s.Name() != c.pattern || a["http.route"] != c.pattern {
				t.Errorf("%s %s: span %q, http.route %q, want %q", pol, c.path, s.Name(), a["http.route"], c.pattern)
			}
			_, hasPath := a["url.path"]
			if want := pol.String() == "raw"; hasPath != want {
				t.Errorf("%s %s: url.path recorded %v, want %v (%v)", pol, c.path, hasPath, want, a)
			}
			if pol.String() == "raw" {
				continue
			}
			for k, v := range a {
				if strings.Contains(v, tenantB.String()) {
					t.Errorf("%s %s: attribute %s = %q holds the raw tenant id", pol, c.path, k, v)
				}
			}
		}
	}
}

// TestClientTenantBaggageNeverSurvives: a client's own tenantwire.tenant
// baggage member (naming tenant B on a request resolved to A) is gone
// before the handler runs: with Config.Baggage off the member is absent,
// with it on it is the bound tenant's under the span policy; the
// client's other members pass through.
func TestClientTenantBaggageNeverSurvives(t *testing.T) {
	hashed, _ := telemetry.New(telemetry.Config{SpanTenant: telemetry.TenantHash(policyKey)})
	hashA, _ := hashed.SpanTenant(tenantA)
	for _, c := range []struct {
		tc   telemetry.Config
		want string
	}{
		{telemetry.Config{SpanTenant: telemetry.TenantRaw}, ""},
		{telemetry.Config{SpanTenant: telemetry.TenantOmit, Baggage: true}, ""},
		{telemetry.Config{SpanTenant: telemetry.TenantRaw, Baggage: true}, tenantA.String()},
		{telemetry.Config{SpanTenant: telemetry.TenantHash(policyKey), Baggage: true}, hashA.Value.AsString()},
	} {
		srv := boundaryApp(t, tracetest.NewSpanRecorder(), c.tc)
		req := httptest.NewRequest("GET", "/items/1", nil)
		req.Header.Set(tenanthttp.DefaultHeader, tenantA.String())
		req.Header.Set("baggage", telemetry.BaggageTenant+"="+tenantB.String()+",keep=1")
		w := httptest.NewRecorder()
		srv.TenantHandler().ServeHTTP(w, req)
		if got, want := w.Body.String(), c.want+"|1"; got != want {
			t.Errorf("%s, baggage %v: the handler saw %q, want %q", c.tc.SpanTenant, c.tc.Baggage, got, want)
		}
	}
}

// TestHashedMetricTenantIsTheKeyedHash: under a hashed metric policy the
// tenant label of a route's series is HMAC-SHA256(key, tenant) (the first
// 16 bytes, in hex), computed here independently, and no label of any
// series scraped holds the raw id, in either spelling.
func TestHashedMetricTenantIsTheKeyedHash(t *testing.T) {
	srv, _ := memoryApp(t, tracetest.NewSpanRecorder(), telemetry.Config{
		MetricTenant: telemetry.TenantHash(policyKey), MetricTenants: func(id tenancy.ID) bool { return id == tenantA }})
	req, _ := http.NewRequest("GET", "http://"+srv.TenantAddr()+"/get", nil)
	req.Header.Set(tenanthttp.DefaultHeader, tenantA.String())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	m := hmac.New(sha256.New, policyKey)
	b := tenantA.Bytes()
	m.Write(b[:])
	want := hex.EncodeToString(m.Sum(nil)[:16])
	fams := scrape(t, srv)
	if s, ok := series(fams, "tenantwire_route_duration_seconds", map[string]string{"route": "session", "tenant": want}); !ok || s.GetHistogram().GetSampleCount() != 1 {
		t.Errorf("no duration series labelled with the tenant's keyed hash %s: %v", want, s)
	}
	raw, bare := tenantA.String(), strings.ReplaceAll(tenantA.String(), "-", "")
	for name, f := range fams {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if v := strings.ToLower(l.GetValue()); strings.Contains(v, raw) || strings.Contains(v, bare) {
					t.Errorf("%s: label %s = %q holds the raw tenant id", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// TestTopTenantsExportedUnderTheirLabel: with Config.Top and a hashed
// label, the route's top tenants of the last complete window are series
// labelled by the keyed hash (never the raw id), at most Export of them.
func TestTopTenantsExportedUnderTheirLabel(t *testing.T) {
	srv, _ := memoryApp(t, tracetest.NewSpanRecorder(), telemetry.Config{
		Top: &telemetry.TopConfig{Size: 4, Export: 1, Window: 200 * time.Millisecond, Label: telemetry.TenantHash(policyKey)}})
	call := func(id tenancy.ID) {
		req, _ := http.NewRequest("GET", "http://"+srv.TenantAddr()+"/get", nil)
		req.Header.Set(tenanthttp.DefaultHeader, id.String())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for range 3 {
		call(tenantA)
	}
	call(tenantB)
	time.Sleep(250 * time.Millisecond) // the window is complete
	m := hmac.New(sha256.New, policyKey)
	b := tenantA.Bytes()
	m.Write(b[:])
	want := hex.EncodeToString(m.Sum(nil)[:16])
	fams := scrape(t, srv)
	s, ok := series(fams, "tenantwire_tenant_top_calls", map[string]string{"route": "session", "tenant": want})
	if !ok || s.GetGauge().GetValue() != 3 {
		t.Fatalf("no top-calls series of A's keyed hash %s with 3 calls: %v", want, s)
	}
	if f := fams["tenantwire_tenant_top_calls"]; len(f.GetMetric()) != 1 {
		t.Errorf("%d top-calls series, want Export 1: %v", len(f.GetMetric()), f)
	}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if strings.Contains(strings.ToLower(l.GetValue()), tenantA.String()) {
					t.Errorf("label %s = %q holds the raw tenant id", l.GetName(), l.GetValue())
				}
			}
		}
	}
}
