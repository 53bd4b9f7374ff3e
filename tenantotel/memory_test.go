package tenantotel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
	"github.com/tenantwire/tenantwire/tenantotel"
)

var tenantA = tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")

// memoryApp is an app with one tenant-aware memory cache route served at
// GET /get on the tenant listener, the SDK recording into rec, and the
// operator listener serving /metrics.
func memoryApp(t *testing.T, rec *tracetest.SpanRecorder, tc telemetry.Config) (*tenanthttp.Server, *memory.Cache) {
	t.Helper()
	var (
		srv   *tenanthttp.Server
		cache *memory.Cache
	)
	app := fx.New(fx.NopLogger,
		memory.Module("sessions", memory.CacheRoute("session", memory.CacheConfig{TenantAware: true, Keys: naming.Shared("sessions")})),
		tenantotel.Module(tenantotel.Config{Telemetry: tc, SpanProcessors: []sdktrace.SpanProcessor{rec}}),
		tenanthttp.Module(tenanthttp.Config{TrustedProxy: true, TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0"}),
		tenanthttp.RouteWith("GET /get", tenanthttp.Tenant, func(c *memory.Cache) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, _, err := c.Get(r.Context(), "k"); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
				}
			})
		}),
		fx.Populate(&srv, &cache),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return srv, cache
}

// scrape reads the operator listener's /metrics with Prometheus' own
// text parser.
func scrape(t *testing.T, srv *tenanthttp.Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + srv.OperatorAddr() + tenantotel.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// series finds the sample of family name whose labels include want.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, bool) {
	f, ok := fams[name]
	if !ok {
		return nil, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m, true
	}
	return nil, false
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	out := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value.String()
	}
	return out
}

// TestRouteCallIsASpanAndASeries: a request through the HTTP boundary to a
// memory route is a server span with the tenant on it and, under it, the
// route's client span with module, route, kind, backend, tier and tenant;
// a call with no tenant bound is recorded with tenant_unbound. The
// operator listener's /metrics, read with Prometheus' parser, counts both
// calls, the refusal by code, and their latency.
func TestRouteCallIsASpanAndASeries(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	srv, cache := memoryApp(t, rec, telemetry.Config{SpanTenant: telemetry.TenantRaw})

	req, _ := http.NewRequest("GET", "http://"+srv.TenantAddr()+"/get", nil)
	req.Header.Set(tenanthttp.DefaultHeader, tenantA.String())
	// The caller's trace: the request span continues it.
	parent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req.Header.Set("traceparent", parent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /get: %s", resp.Status)
	}
	if _, _, err := cache.Get(context.Background(), "k"); !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Fatalf("unbound Get: %v", err)
	}

	var server, call, refused sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch {
		case s.SpanKind() == trace.SpanKindServer && s.Name() == "GET /get":
			server = s
		case s.Name() == "memory session" && s.Status().Code == 0:
			call = s
		case s.Name() == "memory session":
			refused = s
		}
	}
	if server == nil || call == nil || refused == nil {
		t.Fatalf("spans: %v", names(rec.Ended()))
	}
	if server.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || server.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("the request span does not continue the caller's trace: %v parent %v", server.SpanContext(), server.Parent())
	}
	if attrs(server)[telemetry.AttrTenant] != tenantA.String() {
		t.Errorf("request span attributes: %v", attrs(server))
	}
	if call.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Errorf("the route span is not a child of the request span")
	}
	want := map[attribute.Key]string{telemetry.AttrBackend: "memory", telemetry.AttrModule: "sessions", telemetry.AttrRoute: "session",
		telemetry.AttrKind: "cache", telemetry.AttrTier: "tagged", telemetry.AttrTenant: tenantA.String()}
	for k, v := range want {
		if got := attrs(call)[k]; got != v {
			t.Errorf("route span %s = %q, want %q", k, got, v)
		}
	}
	if got := attrs(refused)[telemetry.AttrErrorCode]; got != "tenant_unbound" || len(refused.Events()) == 0 {
		t.Errorf("refused span: code %q, events %v", got, refused.Events())
	}

	fams := scrape(t, srv)
	labels := map[string]string{"backend": "memory", "module": "sessions", "route": "session", "kind": "cache", "tier": "tagged"}
	if m, ok := series(fams, "tenantwire_route_errors_total", map[string]string{"route": "session", "code": "tenant_unbound"}); !ok || m.GetCounter().GetValue() != 1 {
		t.Errorf("errors series: %v %v", m, ok)
	}
	// Calls are the latency histogram's count.
	if m, ok := series(fams, "tenantwire_route_duration_seconds", labels); !ok || m.GetHistogram().GetSampleCount() != 2 {
		t.Errorf("duration series: %v %v", m, ok)
	}
	for _, m := range fams["tenantwire_route_duration_seconds"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "tenant" {
				t.Errorf("a tenant label by default: %v", m)
			}
		}
	}
}

func names(spans []sdktrace.ReadOnlySpan) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return strings.Join(out, ", ")
}

var _ = time.Second

// TestRefusalAtFxNewIsASpan: an app refused during fx.New records one
// span with an event per refusal, its code and module on it.
func TestRefusalAtFxNewIsASpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	app := fx.New(fx.NopLogger,
		tenantotel.Module(tenantotel.Config{SpanProcessors: []sdktrace.SpanProcessor{rec}}),
		// A floor above the memory backend's ceiling: no wiring meets it.
		memory.Module("sessions", modules.RequiredIsolation(tenancy.Dedicated),
			memory.CacheRoute("session", memory.CacheConfig{TenantAware: true, Keys: naming.Shared("sessions")})),
	)
	if app.Err() == nil {
		t.Fatal("the app was not refused")
	}
	check := find(rec.Ended(), telemetry.CheckSpan)
	if check == nil {
		t.Fatalf("spans: %s", names(rec.Ended()))
	}
	var codes []string
	for _, e := range check.Events() {
		for _, kv := range e.Attributes {
			if kv.Key == telemetry.AttrErrorCode {
				codes = append(codes, kv.Value.AsString())
			}
			if kv.Key == telemetry.AttrModule && kv.Value.AsString() != "sessions" {
				t.Errorf("event module %q", kv.Value.AsString())
			}
		}
	}
	if len(codes) == 0 || check.Status().Code != otelcodes.Error {
		t.Fatalf("check span: events %v, status %v", check.Events(), check.Status())
	}
	t.Log("refused with", codes)
}

// TestLatencyBucketsAreSeconds: the route histogram's buckets are the
// seconds ones, not the SDK's default (milliseconds), under which every
// call lands in the first bucket.
func TestLatencyBucketsAreSeconds(t *testing.T) {
	srv, cache := memoryApp(t, tracetest.NewSpanRecorder(), telemetry.Config{})
	if _, _, err := cache.Get(tenancy.WithTenant(context.Background(), tenantA), "k"); err != nil {
		t.Fatal(err)
	}
	m, ok := series(scrape(t, srv), "tenantwire_route_duration_seconds", map[string]string{"route": "session"})
	if !ok {
		t.Fatal("no route histogram")
	}
	var bounds []float64
	for _, b := range m.GetHistogram().GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	if !slices.Equal(bounds, append(slices.Clone(telemetry.LatencyBuckets), math.Inf(1))) {
		t.Fatalf("buckets %v, want %v", bounds, telemetry.LatencyBuckets)
	}
}

// TestProbesAreNotTracedAndWritersKeepTheirInterfaces: scrapes and probes
// on the operator listener make no spans (they come every few seconds);
// a traced handler still finds http.Flusher and http.Hijacker on its
// writer, so streaming and upgrades work with tracing on.
func TestProbesAreNotTracedAndWritersKeepTheirInterfaces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	var srv *tenanthttp.Server
	app := fx.New(fx.NopLogger,
		tenantotel.Module(tenantotel.Config{SpanProcessors: []sdktrace.SpanProcessor{rec}}),
		tenanthttp.Module(tenanthttp.Config{TrustedProxy: true, TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0"}),
		tenanthttp.Route("GET /stream", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, flusher := w.(http.Flusher)
			_, hijacker := w.(http.Hijacker)
			fmt.Fprint(w, flusher, hijacker)
		})),
		fx.Populate(&srv),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	for _, u := range []string{"http://" + srv.OperatorAddr() + "/healthz", "http://" + srv.OperatorAddr() + "/readyz",
		"http://" + srv.OperatorAddr() + "/metrics", "http://" + srv.TenantAddr() + "/stream"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.HasSuffix(u, "/stream") && string(body) != "true true" {
			t.Errorf("the traced writer: Flusher, Hijacker = %s", body)
		}
	}
	if got := names(rec.Ended()); got != "GET /stream" {
		t.Errorf("spans %q, want only the tenant request's", got)
	}
}
