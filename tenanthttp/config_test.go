package tenanthttp_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// A header name no request can carry to the handler would make every
// request the default tenant: it is refused at fx.New.
func TestHeaderNameMustReachHandlers(t *testing.T) {
	for _, name := range []string{
		"X-Tenant-ID ", " X-Tenant-ID", "X-Tenant-ID\t", "X-Tenant-ID:", "X Tenant ID", "X-Tenant-ID\r\n",
		"X-Tenant-ÏD", "(tenant)", "tenant@id", "x/tenant", "x=tenant", `"X-Tenant-ID"`, "X-Tenant-ID\x00",
		"Host", "host", "Content-Length", "transfer-encoding", "Connection", "Keep-Alive", "TE", "Upgrade",
		"Trailer", "Proxy-Connection", "Proxy-Authorization",
	} {
		cfg := tenanthttp.Config{TrustedProxy: true, Header: name}
		e := tenancytest.RequireRefused(t, tenancy.CodeTenantSourceInvalid, tenanthttp.Module(cfg))
		if e.Module != "tenanthttp" || !strings.Contains(e.Detail, strconv.Quote(name)) || e.Fix == "" {
			t.Errorf("%q: refusal does not say what and how: %v", name, e)
		}
		if _, err := tenanthttp.NewResolver(cfg); tenancy.CodeOf(err) != tenancy.CodeTenantSourceInvalid {
			t.Errorf("NewResolver with header %q: %v", name, err)
		}
	}
	for _, name := range []string{"X-Tenant-ID", "x-org", "X_Tenant", "x.tenant", "X-Tenant-ID~", "t", "X-Tenant-Id-2"} {
		tenancytest.RequireWires(t, tenanthttp.Module(tenanthttp.Config{TrustedProxy: true, Header: name}))
	}
	// Header resolution off: the name is never read.
	tenancytest.RequireWires(t, tenanthttp.Module(tenanthttp.Config{HeaderOff: true, Header: "Host", Claim: claimFrom}))
	// Both refusals at once when both apply.
	_, err := tenanthttp.NewResolver(tenanthttp.Config{Header: "X-Tenant-ID "})
	if codes := tenancy.Codes(err); len(codes) != 2 || codes[0] != tenancy.CodeTenantSourceInvalid || codes[1] != tenancy.CodeTrustedProxyRequired {
		t.Errorf("bad name without a proxy: %v", err)
	}
}

// The trusted-proxy interlock over every combination of sources: header and
// host are client-controlled and need TrustedProxy; a claim alone does not.
func TestTrustedProxyInterlockEveryCombination(t *testing.T) {
	type sources struct{ header, claim, host bool }
	for _, c := range []struct {
		sources
		needsProxy bool
	}{
		{sources{header: false, claim: false, host: false}, false}, // every request is the default tenant
		{sources{header: false, claim: true, host: false}, false},
		{sources{header: true, claim: false, host: false}, true},
		{sources{header: false, claim: false, host: true}, true},
		{sources{header: true, claim: true, host: false}, true},
		{sources{header: false, claim: true, host: true}, true},
		{sources{header: true, claim: false, host: true}, true},
		{sources{header: true, claim: true, host: true}, true},
	} {
		for _, proxy := range []bool{false, true} {
			cfg := tenanthttp.Config{HeaderOff: !c.header, TrustedProxy: proxy}
			if c.claim {
				cfg.Claim = claimFrom
			}
			if c.host {
				cfg.Host = hosts
			}
			name := cfg.Mode()
			_, err := tenanthttp.NewResolver(cfg)
			if c.needsProxy && !proxy {
				if tenancy.CodeOf(err) != tenancy.CodeTrustedProxyRequired {
					t.Errorf("%s without a proxy: %v, want trusted_proxy_required", name, err)
					continue
				}
				e := tenancytest.RequireRefused(t, tenancy.CodeTrustedProxyRequired, tenanthttp.Module(cfg))
				if c.header && !strings.Contains(e.Detail, "X-Tenant-ID") || c.host && !strings.Contains(e.Detail, "Host") {
					t.Errorf("%s: the refusal does not name the source: %v", name, e)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s (proxy %v) refused: %v", name, proxy, err)
				continue
			}
			tenancytest.RequireWires(t, tenanthttp.Module(cfg))
		}
	}
}

// Routes of different classes are compared by the requests they match: a
// route that would win a request an operator or blocked route matches is
// refused, whatever its text.
func TestRouteClassOverlapRefused(t *testing.T) {
	ok := tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true}
	h := http.NotFoundHandler()
	type r struct {
		pattern string
		class   tenanthttp.Class
	}
	for _, c := range []struct {
		name    string
		routes  []r
		refused string // the refused route's pattern, "" when the routes wire
	}{
		{"tenant under a blocked subtree", []r{{"GET /debug/pprof/", tenanthttp.Tenant}, {"/debug/", tenanthttp.Blocked}}, "GET /debug/pprof/"},
		{"tenant subtree under a blocked subtree", []r{{"/debug/pprof/", tenanthttp.Tenant}, {"/debug/", tenanthttp.Blocked}}, "/debug/pprof/"},
		{"tenant literal beside an operator wildcard", []r{{"GET /admin/stats", tenanthttp.Tenant}, {"/admin/{p}", tenanthttp.Operator}}, "GET /admin/stats"},
		{"tenant wildcard on an operator path", []r{{"GET /admin/{p}", tenanthttp.Tenant}, {"GET /admin/stats", tenanthttp.Operator}}, "GET /admin/{p}"},
		{"tenant host catch-all", []r{{"x.example.com/", tenanthttp.Tenant}, {"GET /metrics", tenanthttp.Operator}}, "x.example.com/"},
		{"tenant host on an operator path", []r{{"x.example.com/metrics", tenanthttp.Tenant}, {"GET /metrics", tenanthttp.Operator}}, "x.example.com/metrics"},
		{"tenant HEAD on an operator GET", []r{{"HEAD /metrics", tenanthttp.Tenant}, {"GET /metrics", tenanthttp.Operator}}, "HEAD /metrics"},
		{"tenant POST on an operator GET", []r{{"POST /metrics", tenanthttp.Tenant}, {"GET /metrics", tenanthttp.Operator}}, "POST /metrics"},
		{"tenant anchor on a blocked subtree", []r{{"/debug/{$}", tenanthttp.Tenant}, {"/debug/", tenanthttp.Blocked}}, "/debug/{$}"},
		{"tenant multi wildcard under a blocked subtree", []r{{"/debug/x/{rest...}", tenanthttp.Tenant}, {"/debug/", tenanthttp.Blocked}}, "/debug/x/{rest...}"},
		{"tenant catch-all with a method", []r{{"GET /", tenanthttp.Tenant}, {"GET /metrics", tenanthttp.Operator}}, "GET /"},
		{"operator under a blocked subtree", []r{{"GET /debug/vars", tenanthttp.Operator}, {"/debug/", tenanthttp.Blocked}}, "GET /debug/vars"},
		{"tenant wildcard with a method on a built-in operator path", []r{{"GET /{p}", tenanthttp.Tenant}}, "GET /{p}"},

		{"method-less tenant catch-all", []r{{"/", tenanthttp.Tenant}, {"GET /metrics", tenanthttp.Operator}, {"/debug/", tenanthttp.Blocked}}, ""},
		{"tenant subtree beside a blocked one", []r{{"/debugger/", tenanthttp.Tenant}, {"/debug/", tenanthttp.Blocked}}, ""},
		{"tenant wildcard one level deeper", []r{{"GET /admin/{p}/x", tenanthttp.Tenant}, {"/admin/{p}", tenanthttp.Operator}}, ""},
		{"tenant anchor beside an operator subtree's parent", []r{{"GET /admin", tenanthttp.Tenant}, {"/admin/", tenanthttp.Operator}}, ""},
		{"method-less tenant subtree holding an operator path", []r{{"/admin/", tenanthttp.Tenant}, {"GET /admin/stats", tenanthttp.Operator}}, ""},
		{"operator path under an operator host", []r{{"/", tenanthttp.Tenant}, {"ops.example.com/", tenanthttp.Operator}}, ""},
		{"method-less tenant wildcard beside built-in operator paths", []r{{"/{p}", tenanthttp.Tenant}}, ""},
		{"operator catch-all beside a blocked subtree", []r{{"/", tenanthttp.Operator}, {"/debug/", tenanthttp.Blocked}}, ""},
	} {
		opts := []fx.Option{tenanthttp.Module(ok)}
		for _, rt := range c.routes {
			hh := h
			if rt.class == tenanthttp.Blocked {
				hh = nil
			}
			opts = append(opts, tenanthttp.Route(rt.pattern, rt.class, hh))
		}
		if c.refused == "" {
			tenancytest.RequireWires(t, opts...)
			continue
		}
		e := tenancytest.RequireRefused(t, tenancy.CodeRouteClassOverlap, opts...)
		if e.Route != c.refused || e.Module != "tenanthttp" || e.Fix == "" {
			t.Errorf("%s: refused %q: %v", c.name, e.Route, e)
		}
	}
}
