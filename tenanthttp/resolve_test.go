package tenanthttp_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

var (
	tenantA = tenancy.MustParseID("a1b2c3d4-e5f6-4789-abcd-ef0123456789")
	tenantB = tenancy.MustParseID("0f0e0d0c-0b0a-4909-8807-060504030201")
)

func TestParseHeaderTable(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		want   tenancy.ID
		named  bool
		bad    bool
	}{
		{"absent", nil, tenancy.Default, false, false},
		{"empty", []string{""}, tenancy.Default, false, false},
		{"whitespace", []string{" \t "}, tenancy.Default, false, false},
		{"unicode space", []string{"\u00a0"}, tenancy.ID{}, false, true},
		{"lowercase", []string{"a1b2c3d4-e5f6-4789-abcd-ef0123456789"}, tenantA, true, false},
		{"uppercase lowered", []string{"A1B2C3D4-E5F6-4789-ABCD-EF0123456789"}, tenantA, true, false},
		{"default named", []string{"00000000-0000-0000-0000-000000000001"}, tenancy.Default, true, false},
		{"nil uuid", []string{"00000000-0000-0000-0000-000000000000"}, tenancy.ID{}, false, true},
		{"braces", []string{"{a1b2c3d4-e5f6-4789-abcd-ef0123456789}"}, tenancy.ID{}, false, true},
		{"urn", []string{"urn:uuid:a1b2c3d4-e5f6-4789-abcd-ef0123456789"}, tenancy.ID{}, false, true},
		{"no dashes", []string{"a1b2c3d4e5f64789abcdef0123456789"}, tenancy.ID{}, false, true},
		{"padded", []string{" a1b2c3d4-e5f6-4789-abcd-ef0123456789"}, tenancy.ID{}, false, true},
		{"name", []string{"acme"}, tenancy.ID{}, false, true},
		{"non-hex", []string{"g1b2c3d4-e5f6-4789-abcd-ef0123456789"}, tenancy.ID{}, false, true},
		{"two values", []string{"a1b2c3d4-e5f6-4789-abcd-ef0123456789", "a1b2c3d4-e5f6-4789-abcd-ef0123456789"}, tenancy.ID{}, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, named, err := tenanthttp.ParseHeader(c.values)
			if c.bad {
				if !errors.Is(err, tenancy.CodeInvalidTenantHeader) || !id.IsZero() {
					t.Fatalf("got %v, %v, %v; want invalid_tenant_header", id, named, err)
				}
				return
			}
			if err != nil || id != c.want || named != c.named {
				t.Fatalf("got %v, %v, %v; want %v, %v", id, named, err, c.want, c.named)
			}
		})
	}
}

// FuzzTenantHeader checks the header table: never a panic; a
// blank header is the default tenant; a named tenant is exactly the
// lowercased input; everything else is refused, and the middleware answers
// the exact 400.
func FuzzTenantHeader(f *testing.F) {
	for _, s := range []string{"", " ", "\t", "a1b2c3d4-e5f6-4789-abcd-ef0123456789", "A1B2C3D4-E5F6-4789-ABCD-EF0123456789",
		"00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000001", "{}", "acme", "\u00a0"} {
		f.Add(s)
	}
	res, err := tenanthttp.NewResolver(tenanthttp.Config{TrustedProxy: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, named, err := tenanthttp.ParseHeader([]string{s})
		switch {
		case strings.Trim(s, " \t\r\n\v\f") == "":
			if err != nil || named || id != tenancy.Default {
				t.Fatalf("blank %q: %v, %v, %v", s, id, named, err)
			}
		case err == nil:
			if !named || id.IsZero() || id.String() != strings.ToLower(s) || id.String() != strings.ToLower(id.String()) {
				t.Fatalf("%q resolved to %v (named %v)", s, id, named)
			}
			if _, perr := tenancy.ParseID(s); perr != nil {
				t.Fatalf("%q accepted but ParseID refuses it: %v", s, perr)
			}
		default:
			if err != tenanthttp.ErrInvalidHeader || named || !id.IsZero() {
				t.Fatalf("%q refused with %v (id %v, named %v)", s, err, id, named)
			}
			if _, perr := tenancy.ParseID(s); perr == nil {
				t.Fatalf("%q refused but ParseID accepts it", s)
			}
		}
		// The middleware agrees with the table.
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set(tenanthttp.DefaultHeader, s)
		rec := httptest.NewRecorder()
		var bound tenancy.ID
		res.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			bound, _ = tenancy.FromContext(r.Context())
		})).ServeHTTP(rec, r)
		if err != nil {
			if rec.Code != http.StatusBadRequest || rec.Body.String() != `{"error":"invalid tenant header (must be a UUID)","code":"invalid_tenant_header"}` { // the body docs/http.md states
				t.Fatalf("%q: %d %q", s, rec.Code, rec.Body.String())
			}
		} else if bound != id {
			t.Fatalf("%q: bound %v, want %v", s, bound, id)
		}
	})
}

func TestMiddlewareMalformedHeaderExact400(t *testing.T) {
	res, err := tenanthttp.NewResolver(tenanthttp.Config{TrustedProxy: true, Header: "x-org"})
	if err != nil {
		t.Fatal(err)
	}
	called := false
	h := res.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-Org", "tenant-a")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	body, _ := io.ReadAll(rec.Body)
	if called || rec.Code != 400 || string(body) != `{"error":"invalid tenant header (must be a UUID)","code":"invalid_tenant_header"}` ||
		rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("called=%v %d %q %q", called, rec.Code, body, rec.Header().Get("Content-Type"))
	}
	// The default header name is not consulted when another is configured.
	r = httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-Tenant-ID", "garbage")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if !called || rec.Code != 200 {
		t.Fatalf("configured header name ignored: called=%v %d", called, rec.Code)
	}
}

type claimKey struct{}

func claimFrom(r *http.Request) (tenancy.ID, bool) {
	id, ok := r.Context().Value(claimKey{}).(tenancy.ID)
	return id, ok
}

func hosts(label string) (tenancy.ID, bool) {
	switch label {
	case "alpha":
		return tenantA, true
	case "beta":
		return tenantB, true
	}
	return tenancy.ID{}, false
}

func TestResolverChain(t *testing.T) {
	res, err := tenanthttp.NewResolver(tenanthttp.Config{TrustedProxy: true, Host: hosts, Claim: claimFrom})
	if err != nil {
		t.Fatal(err)
	}
	type req struct {
		name   string
		host   string
		header string
		claim  tenancy.ID
		want   tenancy.ID
		code   tenancy.Code
	}
	for _, c := range []req{
		{name: "nothing", host: "example.com", want: tenancy.Default},
		{name: "host only", host: "Alpha.example.com:8443", want: tenantA},
		{name: "header only", host: "example.com", header: tenantB.String(), want: tenantB},
		{name: "claim only", host: "example.com", claim: tenantA, want: tenantA},
		{name: "all agree", host: "alpha.example.com", header: tenantA.String(), claim: tenantA, want: tenantA},
		{name: "claim vs header", host: "example.com", header: tenantB.String(), claim: tenantA, code: tenancy.CodeTenantSourceConflict},
		{name: "claim vs host", host: "beta.example.com", claim: tenantA, code: tenancy.CodeTenantSourceConflict},
		{name: "header vs host", host: "beta.example.com", header: tenantA.String(), code: tenancy.CodeTenantSourceConflict},
		{name: "blank header defers to claim", host: "example.com", header: " ", claim: tenantB, want: tenantB},
		{name: "malformed header beats claim", host: "example.com", header: "x", claim: tenantA, code: tenancy.CodeInvalidTenantHeader},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Host = c.host
			if c.header != "" {
				r.Header.Set("X-Tenant-ID", c.header)
			}
			if !c.claim.IsZero() {
				r = r.WithContext(contextWithClaim(r, c.claim))
			}
			id, err := res.Resolve(r)
			if c.code != "" {
				if tenancy.CodeOf(err) != c.code {
					t.Fatalf("got %v, %v; want %s", id, err, c.code)
				}
				rec := httptest.NewRecorder()
				res.Middleware(http.NotFoundHandler()).ServeHTTP(rec, r)
				if c.code == tenancy.CodeTenantSourceConflict &&
					(rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"code":"tenant_source_conflict"`)) {
					t.Fatalf("conflict answered %d %q", rec.Code, rec.Body.String())
				}
				return
			}
			if err != nil || id != c.want {
				t.Fatalf("got %v, %v; want %v", id, err, c.want)
			}
		})
	}
}

func TestNewResolverInterlock(t *testing.T) {
	for _, cfg := range []tenanthttp.Config{{}, {Header: "X-Org"}, {HeaderOff: true, Host: hosts}} {
		if _, err := tenanthttp.NewResolver(cfg); tenancy.CodeOf(err) != tenancy.CodeTrustedProxyRequired {
			t.Errorf("%+v: %v, want trusted_proxy_required", cfg, err)
		}
	}
	if _, err := tenanthttp.NewResolver(tenanthttp.Config{HeaderOff: true, Claim: claimFrom}); err != nil {
		t.Errorf("claim-only mode refused: %v", err)
	}
}

// TestRequireTenant: with RequireTenant, a request that names no tenant
// (no header, a blank one, a header name the proxy does not set, a host
// that maps to none, no claim) is a 400 naming tenant_required and never
// reaches the handler; a request that names one is served as usual, and
// without the setting the same requests are the default tenant.
func TestRequireTenant(t *testing.T) {
	cfg := tenanthttp.Config{TrustedProxy: true, Host: hosts, Claim: claimFrom, RequireTenant: true}
	res, err := tenanthttp.NewResolver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RequireTenant = false
	lenient, err := tenanthttp.NewResolver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	named := func(r *http.Request) *http.Request { r.Header.Set("X-Tenant-ID", tenantB.String()); return r }
	for name, mk := range map[string]func(*http.Request) *http.Request{
		"no source":         func(r *http.Request) *http.Request { return r },
		"blank header":      func(r *http.Request) *http.Request { r.Header.Set("X-Tenant-ID", "  "); return r },
		"other header name": func(r *http.Request) *http.Request { r.Header.Set("X-Tenant", tenantB.String()); return r },
		"unmapped host":     func(r *http.Request) *http.Request { r.Host = "nobody.example.com"; return r },
	} {
		t.Run(name, func(t *testing.T) {
			r := mk(httptest.NewRequest(http.MethodGet, "/", nil))
			called := false
			rec := httptest.NewRecorder()
			res.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })).ServeHTTP(rec, r)
			if called || rec.Code != http.StatusBadRequest || rec.Body.String() != `{"error":"the request names no tenant","code":"tenant_required"}` {
				t.Fatalf("answered %d %q, handler called %v", rec.Code, rec.Body.String(), called)
			}
			if _, err := res.Resolve(r); tenancy.CodeOf(err) != tenancy.CodeTenantRequired {
				t.Fatalf("Resolve: %v", err)
			}
			if id, err := lenient.Resolve(r); err != nil || id != tenancy.Default {
				t.Fatalf("without RequireTenant: %v, %v; want the default tenant", id, err)
			}
		})
	}
	for name, r := range map[string]*http.Request{
		"header": named(httptest.NewRequest(http.MethodGet, "/", nil)),
		"claim":  httptest.NewRequest(http.MethodGet, "/", nil).WithContext(contextWithClaim(httptest.NewRequest(http.MethodGet, "/", nil), tenantA)),
		"host": func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Host = "alpha.example.com"
			return r
		}(),
	} {
		if id, err := res.Resolve(r); err != nil || id.IsZero() || id == tenancy.Default {
			t.Errorf("%s: %v, %v", name, id, err)
		}
	}
}
