package tenanthttp_test

import (
	"strconv"
	"strings"
	"testing"

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
