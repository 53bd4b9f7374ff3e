package tenanthttp_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// The operator routes every test below reads: the built-in ones, a
// /metrics like tenantotel's, and a service's own.
var operatorPaths = []string{"/readyz", "/healthz", "/tenancy/matrix", "/metrics", "/ops/status"}

func operatorRoutes() fx.Option {
	ok := func(body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) })
	}
	return fx.Options(
		tenanthttp.Route("GET /metrics", tenanthttp.Operator, ok("tenantwire_up 1\n")),
		tenanthttp.Route("GET /ops/status", tenanthttp.Operator, ok("status: every tenant's secrets\n")),
	)
}

// operatorGet sends GET path to the operator listener with host as the
// Host header and header added, "PORT" in either replaced by the
// listener's port.
func operatorGet(t *testing.T, srv *tenanthttp.Server, path, host string, header http.Header) (int, map[string]any, string) {
	t.Helper()
	_, port, _ := net.SplitHostPort(srv.OperatorAddr())
	r, err := http.NewRequest("GET", "http://"+srv.OperatorAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		r.Host = strings.ReplaceAll(host, "PORT", port)
	}
	for k, vs := range header {
		for _, v := range vs {
			r.Header.Add(k, strings.ReplaceAll(v, "PORT", port))
		}
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m, string(b)
}

// TestOperatorListenerRefusesBrowsers: what a web page can make a browser
// send to the operator listener (a DNS-rebinding Host, a foreign or null
// Origin, a cross-site or same-site Sec-Fetch-Site) is refused 403 with
// operator_request_forbidden on every operator route, the built-in ones,
// /metrics and a service's own, before its handler runs; an unknown path
// too. What a command or a scraper sends is served.
func TestOperatorListenerRefusesBrowsers(t *testing.T) {
	srv := startApp(t, tenanthttp.Config{TrustedProxy: true}, operatorRoutes(), whoRoute)
	for _, p := range append(operatorPaths, "/nothing-here") {
		for name, c := range map[string]struct {
			host   string
			header http.Header
		}{
			"rebinding Host":              {host: "attacker.example:PORT"},
			"rebinding Host without port": {host: "attacker.example"},
			"loopback name, other port":   {host: "127.0.0.1:1"},
			"loopback name, trailing dot": {host: "localhost.:PORT"},
			"loopback as a subdomain":     {host: "localhost.attacker.example:PORT"},
			"empty Host":                  {host: ":PORT"},
			"foreign Origin":              {header: http.Header{"Origin": {"https://attacker.example"}}},
			"rebinding Origin and Host":   {host: "attacker.example:PORT", header: http.Header{"Origin": {"http://attacker.example:PORT"}}},
			"null Origin":                 {header: http.Header{"Origin": {"null"}}},
			"two Origins":                 {header: http.Header{"Origin": {"http://127.0.0.1:PORT", "https://attacker.example"}}},
			"Origin on another port":      {header: http.Header{"Origin": {"http://127.0.0.1:1"}}},
			"Sec-Fetch-Site cross-site":   {header: http.Header{"Sec-Fetch-Site": {"cross-site"}}},
			"Sec-Fetch-Site same-site":    {header: http.Header{"Sec-Fetch-Site": {"same-site"}}},
		} {
			st, body, raw := operatorGet(t, srv, p, c.host, c.header)
			if st != http.StatusForbidden || body["code"] != string(tenancy.CodeOperatorRequestForbidden) || body["fix"] == "" {
				t.Errorf("%s on %s: %d %q, want 403 %s", name, p, st, raw, tenancy.CodeOperatorRequestForbidden)
			}
			if strings.Contains(raw, "tenantwire_up") || strings.Contains(raw, "secrets") || strings.Contains(raw, "checks") {
				t.Errorf("%s on %s: the handler ran: %q", name, p, raw)
			}
		}
	}
	for _, p := range operatorPaths {
		for name, c := range map[string]struct {
			host   string
			header http.Header
		}{
			// A Prometheus target 127.0.0.1:<port> sends exactly this Host.
			"127.0.0.1:port":      {},
			"localhost":           {host: "localhost"},
			"LocalHost:port":      {host: "LocalHost:PORT"},
			"[::1]:port":          {host: "[::1]:PORT"},
			"[::1]":               {host: "[::1]"},
			"same Origin":         {header: http.Header{"Origin": {"http://127.0.0.1:PORT"}}},
			"Sec-Fetch-Site none": {header: http.Header{"Sec-Fetch-Site": {"none"}}},
			"same-origin fetch":   {header: http.Header{"Sec-Fetch-Site": {"same-origin"}}},
		} {
			if st, _, raw := operatorGet(t, srv, p, c.host, c.header); st != http.StatusOK {
				t.Errorf("%s on %s: %d %q, want 200", name, p, st, raw)
			}
		}
	}
	// The tenant listener keeps its own rules: any Host reaches a tenant route.
	r, _ := http.NewRequest("GET", "http://"+srv.TenantAddr()+"/who", nil)
	r.Host = "shop.example"
	r.Header.Set("X-Tenant-ID", tenantA.String())
	if resp, err := http.DefaultClient.Do(r); err != nil || resp.StatusCode != 200 {
		t.Errorf("tenant listener: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// TestOperatorHostsConfigured: Config.OperatorHosts replaces the loopback
// names; an entry without a port takes the listener's own or none, one
// with a port that port only; an entry that is not a host is refused at
// fx.New with operator_hosts_invalid. OperatorHandler, driven without a
// listener, applies the same names.
func TestOperatorHostsConfigured(t *testing.T) {
	srv := startApp(t, tenanthttp.Config{TrustedProxy: true, OperatorHosts: []string{"ops.internal", "ops.example:443", "10.0.0.5"}}, operatorRoutes())
	for host, want := range map[string]int{
		"ops.internal": 200, "OPS.internal:PORT": 200, "ops.example:443": 200, "10.0.0.5:PORT": 200,
		"ops.example": 403, "ops.internal:443": 403, "localhost:PORT": 403, "127.0.0.1:PORT": 403, "10.0.0.6:PORT": 403,
	} {
		for _, p := range []string{"/readyz", "/ops/status"} {
			if st, _, raw := operatorGet(t, srv, p, host, nil); st != want {
				t.Errorf("Host %s on %s: %d %q, want %d", host, p, st, raw, want)
			}
		}
	}
	for _, bad := range []string{"http://ops.internal", "ops.internal/x", "", "ops:port", "[::1", "*.example", "ops.internal:99999"} {
		app := fx.New(fx.NopLogger, tenanthttp.Module(tenanthttp.Config{TrustedProxy: true, OperatorHosts: []string{"localhost", bad}}))
		if tenancy.CodeOf(app.Err()) != tenancy.CodeOperatorHostsInvalid {
			t.Errorf("OperatorHosts %q: %v", bad, app.Err())
		}
	}

	h := srv.OperatorHandler()
	for host, want := range map[string]int{"ops.internal": 200, "example.com": 403} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/ops/status", nil)
		r.Host = host
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("OperatorHandler, Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}
