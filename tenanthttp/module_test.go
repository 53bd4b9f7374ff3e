package tenanthttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/fx"
	"go.uber.org/goleak"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// Every test of the package leaves no goroutine behind: the
// listeners stop in OnStop. Boot lines of apps without their own logger
// are discarded.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	goleak.VerifyTestMain(m)
}

type note struct {
	Text string `json:"text"`
}

// noteRoutes are tenant routes over a per-tenant memory container: the
// handlers never see a tenant; the adapter reads it from the context the
// middleware bound.
func noteRoutes() fx.Option {
	return fx.Options(
		memory.Module("notes", modules.RequiredIsolation(tenancy.Namespace),
			memory.Document[note]("notes", memory.DocumentConfig{Read: naming.PerTenant("notes")})),
		tenanthttp.RouteWith("PUT /notes/{id}", tenanthttp.Tenant, func(d *memory.Documents[note]) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var n note
				if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
					http.Error(w, "bad body", http.StatusBadRequest)
					return
				}
				if _, err := d.Create(r.Context(), r.PathValue("id"), n); err != nil {
					http.Error(w, err.Error(), http.StatusConflict)
					return
				}
				w.WriteHeader(http.StatusCreated)
			})
		}),
		tenanthttp.RouteWith("GET /notes/{id}", tenanthttp.Tenant, func(d *memory.Documents[note]) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rec, err := d.Get(r.Context(), r.PathValue("id"))
				if errors.Is(err, document.ErrNotFound) {
					http.NotFound(w, r)
					return
				}
				if err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				_ = json.NewEncoder(w).Encode(rec.Value)
			})
		}),
		tenanthttp.Route("GET /metrics", tenanthttp.Operator, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "requests_total 1\n")
		})),
		tenanthttp.Route("/debug/", tenanthttp.Blocked, nil),
	)
}

// bearerAuth stands in for the user's authentication middleware: it puts
// the principal's tenant claim in the context, where Config.Claim reads it.
func bearerAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			if id, err := tenancy.ParseID(tok); err == nil {
				r = r.WithContext(contextWithClaim(r, id))
			}
		}
		next.ServeHTTP(w, r)
	})
}

type client struct {
	t *testing.T
	c *http.Client
}

func (c client) do(method, url, tenant string, body string, hdr ...string) (int, string, http.Header) {
	c.t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if tenant != "" {
		req.Header.Set("X-Tenant-ID", tenant)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestEndToEndOnLoopback(t *testing.T) {
	var srv *tenanthttp.Server
	var logs bytes.Buffer
	app := fx.New(fx.NopLogger,
		fx.Supply(slog.New(slog.NewTextHandler(&logs, nil))),
		tenanthttp.Module(tenanthttp.Config{
			TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true,
			Claim: claimFrom, Wrap: []func(http.Handler) http.Handler{bearerAuth},
		}),
		noteRoutes(),
		fx.Populate(&srv),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	c := client{t, &http.Client{Transport: tr}}
	defer func() {
		tr.CloseIdleConnections()
		if err := app.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	if !strings.Contains(logs.String(), "mode=claim+header") || !strings.Contains(logs.String(), "trusted_proxy=true") {
		t.Errorf("boot log does not state the mode: %s", logs.String())
	}
	ten, op := "http://"+srv.TenantAddr(), "http://"+srv.OperatorAddr()
	a, b := tenantA.String(), strings.ToUpper(tenantB.String())

	if code, body, _ := c.do("PUT", ten+"/notes/n1", a, `{"text":"A's secret"}`); code != http.StatusCreated {
		t.Fatalf("write as A: %d %s", code, body)
	}
	if code, body, _ := c.do("GET", ten+"/notes/n1", a, ""); code != 200 || !strings.Contains(body, "A's secret") {
		t.Fatalf("A reads its own note: %d %s", code, body)
	}
	for name, tenant := range map[string]string{"B": b, "default (no header)": "", "default (blank)": "  "} {
		if code, body, _ := c.do("GET", ten+"/notes/n1", tenant, ""); code != http.StatusNotFound || strings.Contains(body, "secret") {
			t.Errorf("%s read A's note: %d %s", name, code, body)
		}
	}
	// B writes the same id into its own namespace; A's note is intact.
	if code, _, _ := c.do("PUT", ten+"/notes/n1", b, `{"text":"B's"}`); code != http.StatusCreated {
		t.Fatalf("write as B: %d", code)
	}
	if _, body, _ := c.do("GET", ten+"/notes/n1", a, ""); !strings.Contains(body, "A's secret") {
		t.Errorf("A's note changed: %s", body)
	}

	code, body, h := c.do("GET", ten+"/notes/n1", "tenant-a", "")
	if code != 400 || body != `{"error":"invalid tenant header (must be a UUID)","code":"invalid_tenant_header"}` || h.Get("Content-Type") != "application/json" {
		t.Errorf("malformed header: %d %q %q", code, body, h.Get("Content-Type"))
	}
	code, body, _ = c.do("GET", ten+"/notes/n1", b, "", "Authorization", "Bearer "+a)
	if code != http.StatusForbidden || !strings.Contains(body, `"code":"tenant_source_conflict"`) {
		t.Errorf("claim A with header B: %d %s", code, body)
	}
	if code, body, _ := c.do("GET", ten+"/notes/n1", "", "", "Authorization", "Bearer "+a); code != 200 || !strings.Contains(body, "A's secret") {
		t.Errorf("claim A alone: %d %s", code, body)
	}

	// Operator, blocked and unknown paths are 404 on the tenant listener,
	// whatever the header says.
	for _, p := range []string{"/healthz", "/tenancy/matrix", "/metrics", "/debug/pprof/", "/nope"} {
		for _, tenant := range []string{"", a, "garbage"} {
			if code, body, _ := c.do("GET", ten+p, tenant, ""); code != http.StatusNotFound {
				t.Errorf("tenant listener %s (header %q): %d %s", p, tenant, code, body)
			}
		}
	}
	// Tenant and blocked paths are 404 on the operator listener.
	for _, p := range []string{"/notes/n1", "/debug/pprof/"} {
		if code, _, _ := c.do("GET", op+p, a, ""); code != http.StatusNotFound {
			t.Errorf("operator listener %s: %d", p, code)
		}
	}

	code, body, _ = c.do("GET", op+"/healthz", "", "")
	var health map[string]any
	if err := json.Unmarshal([]byte(body), &health); code != 200 || err != nil ||
		health["header_mode"] != true || health["trusted_proxy"] != true || health["header"] != "X-Tenant-ID" ||
		health["claim_mode"] != true || health["host_mode"] != false {
		t.Errorf("healthz: %d %s %v", code, body, err)
	}
	code, body, _ = c.do("GET", op+"/tenancy/matrix", "", "")
	if code != 200 || !json.Valid([]byte(body)) || !strings.Contains(body, "notes") || !strings.Contains(body, "namespace") {
		t.Errorf("matrix: %d %s", code, body)
	}
	if strings.Contains(body, tenantA.String()) || strings.Contains(body, tenantB.String()) {
		t.Errorf("matrix names a tenant: %s", body)
	}
	if code, body, _ := c.do("GET", op+"/metrics", "", ""); code != 200 || body != "requests_total 1\n" {
		t.Errorf("metrics: %d %s", code, body)
	}
}

func TestRefusedDuringFxNew(t *testing.T) {
	started := false
	opened := fx.Invoke(func(lc fx.Lifecycle) {
		lc.Append(fx.StartHook(func() { started = true }))
	})
	ok := tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true}
	h := http.NotFoundHandler()

	e := tenancytest.RequireRefused(t, tenancy.CodeTrustedProxyRequired,
		tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0"}), opened)
	if !strings.Contains(e.Detail, "X-Tenant-ID") || e.Fix == "" {
		t.Errorf("refusal does not say why: %v", e)
	}
	tenancytest.RequireRefused(t, tenancy.CodeTrustedProxyRequired,
		tenanthttp.Module(tenanthttp.Config{HeaderOff: true, Host: hosts}))
	tenancytest.RequireWires(t, tenanthttp.Module(tenanthttp.Config{HeaderOff: true, Claim: claimFrom}))

	e = tenancytest.RequireRefused(t, tenancy.CodeRouteUnclassified,
		tenanthttp.Module(ok), tenanthttp.Route("GET /orders", tenanthttp.Tenant, h), tenanthttp.Route("GET /admin", 0, h), opened)
	if e.Route != "GET /admin" {
		t.Errorf("refusal names route %q", e.Route)
	}
	tenancytest.RequireRefused(t, tenancy.CodeRouteClassOverlap,
		tenanthttp.Module(ok), tenanthttp.Route("GET /healthz", tenanthttp.Tenant, h))
	tenancytest.RequireRefused(t, tenancy.CodeRouteClassOverlap,
		tenanthttp.Module(ok), tenanthttp.Route("GET /a", tenanthttp.Tenant, h), tenanthttp.Route("GET /a", tenanthttp.Blocked, nil))
	tenancytest.RequireRefused(t, tenancy.CodeRouteInvalid,
		tenanthttp.Module(ok), tenanthttp.Route("GET /a", tenanthttp.Tenant, nil))
	tenancytest.RequireRefused(t, tenancy.CodeRouteClassOverlap, // one path, two classes
		tenanthttp.Module(ok), tenanthttp.Route("/m", tenanthttp.Tenant, h), tenanthttp.Route("GET /m", tenanthttp.Operator, h))
	tenancytest.RequireWires(t, tenanthttp.Module(ok), // several operator methods share one shadow
		tenanthttp.Route("GET /m", tenanthttp.Operator, h), tenanthttp.Route("POST /m", tenanthttp.Operator, h),
		tenanthttp.Route("/m/", tenanthttp.Blocked, nil), tenanthttp.Route("GET /t", tenanthttp.Tenant, h),
		tenanthttp.Route("/m/", tenanthttp.Blocked, nil), tenanthttp.Route("GET /m/", tenanthttp.Blocked, nil))
	tenancytest.RequireRefused(t, tenancy.CodeRouteInvalid,
		tenanthttp.Module(ok), tenanthttp.Route("BAD PATTERN WITH SPACES", tenanthttp.Tenant, h))
	// A yielding route is switched off by a Blocked declaration covering
	// it whole, refused beside one that covers only part of it, and a
	// plain route is refused under the same declaration.
	yield := func(p string) fx.Option {
		return tenanthttp.RouteWithYield(p, tenanthttp.Operator, func(fx.Lifecycle) http.Handler { return h })
	}
	tenancytest.RequireWires(t, tenanthttp.Module(ok), yield("POST /lib/{id}/run"), tenanthttp.Route("/lib/", tenanthttp.Blocked, nil))
	tenancytest.RequireRefused(t, tenancy.CodeRouteClassOverlap,
		tenanthttp.Module(ok), yield("POST /lib/{id}/run"), tenanthttp.Route("/lib/x/run", tenanthttp.Blocked, nil))
	tenancytest.RequireRefused(t, tenancy.CodeRouteClassOverlap,
		tenanthttp.Module(ok), tenanthttp.Route("POST /lib/{id}/run", tenanthttp.Operator, h), tenanthttp.Route("/lib/", tenanthttp.Blocked, nil))

	// errors.As finds the coded error through fx's wrapping.
	err := fx.New(fx.NopLogger, tenanthttp.Module(tenanthttp.Config{})).Err()
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeTrustedProxyRequired {
		t.Errorf("errors.As through fx: %v", err)
	}
	if started {
		t.Error("an OnStart hook ran in a refused app")
	}
}
