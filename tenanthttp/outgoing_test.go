package tenanthttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// TestOutgoingTenant is the outgoing rule as a table: the bound tenant,
// nothing for a tenant-global context, tenant_unbound for neither, and a
// hand-set value only when it names the same tenant.
func TestOutgoingTenant(t *testing.T) {
	bound := tenancy.WithTenant(context.Background(), tenantA)
	global := tenancy.WithGlobal(context.Background())
	for _, c := range []struct {
		name     string
		ctx      context.Context
		existing []string
		want     string
		code     tenancy.Code
	}{
		{name: "bound", ctx: bound, want: tenantA.String()},
		{name: "bound, same tenant set by hand", ctx: bound, existing: []string{strings.ToUpper(tenantA.String())}, want: tenantA.String()},
		{name: "bound, blank set by hand", ctx: bound, existing: []string{" "}, want: tenantA.String()},
		{name: "bound, other tenant set by hand", ctx: bound, existing: []string{tenantB.String()}, code: tenancy.CodeTenantSourceConflict},
		{name: "bound, two values set by hand", ctx: bound, existing: []string{tenantA.String(), tenantA.String()}, code: tenancy.CodeTenantSourceConflict},
		{name: "bound, malformed set by hand", ctx: bound, existing: []string{"x"}, code: tenancy.CodeTenantSourceConflict},
		{name: "global", ctx: global, want: ""},
		{name: "global, tenant set by hand", ctx: global, existing: []string{tenantA.String()}, code: tenancy.CodeTenantSourceConflict},
		{name: "global inside a bound request", ctx: tenancy.WithGlobal(bound), want: ""},
		{name: "unbound", ctx: context.Background(), code: tenancy.CodeTenantUnbound},
		{name: "unbound, tenant set by hand", ctx: context.Background(), existing: []string{tenantA.String()}, code: tenancy.CodeTenantUnbound},
	} {
		got, err := tenanthttp.OutgoingTenant(c.ctx, c.existing)
		if c.code != "" {
			if tenancy.CodeOf(err) != c.code || got != "" {
				t.Errorf("%s: got %q, %v; want %s", c.name, got, err, c.code)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// TestTransportCarriesTenant: over loopback, a request sent through
// Transport under a bound context reaches a tenanthttp boundary (which
// requires a tenant) as that tenant; under a tenant-global context it
// leaves with no header; with neither, or with a conflicting header set
// by hand, it is refused before anything is sent, and its body is closed.
func TestTransportCarriesTenant(t *testing.T) {
	res, err := tenanthttp.NewResolver(tenanthttp.Config{TrustedProxy: true, RequireTenant: true})
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	next := httptest.NewServer(res.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		id, _ := tenancy.FromContext(r.Context())
		_, _ = io.WriteString(w, id.String())
	})))
	defer next.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &tenanthttp.Transport{Base: base}}

	get := func(ctx context.Context, hdr string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, next.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if hdr != "" {
			req.Header.Set("X-Tenant-ID", hdr)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if req.Header.Get("X-Tenant-ID") != hdr {
			t.Errorf("the caller's request was modified: %q", req.Header.Get("X-Tenant-ID"))
		}
		return resp.StatusCode, string(b), nil
	}
	bound := tenancy.WithTenant(context.Background(), tenantA)
	if code, body, err := get(bound, ""); err != nil || code != http.StatusOK || body != tenantA.String() {
		t.Errorf("bound: %d %q %v", code, body, err)
	}
	if code, body, err := get(bound, strings.ToUpper(tenantA.String())); err != nil || code != http.StatusOK || body != tenantA.String() {
		t.Errorf("bound, same tenant set by hand: %d %q %v", code, body, err)
	}
	// Global: no header leaves, so the callee (which requires a tenant)
	// answers tenant_required.
	if code, body, err := get(tenancy.WithGlobal(bound), ""); err != nil || code != http.StatusBadRequest || !strings.Contains(body, "tenant_required") {
		t.Errorf("global: %d %q %v", code, body, err)
	}
	before := hits.Load()
	for name, c := range map[string]struct {
		ctx  context.Context
		hdr  string
		code tenancy.Code
	}{
		"unbound":                  {context.Background(), "", tenancy.CodeTenantUnbound},
		"unbound, set by hand":     {context.Background(), tenantA.String(), tenancy.CodeTenantUnbound},
		"other tenant set by hand": {bound, tenantB.String(), tenancy.CodeTenantSourceConflict},
	} {
		if _, _, err := get(c.ctx, c.hdr); !errors.Is(err, c.code) {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
	body := &closeRecorder{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest(http.MethodPost, next.URL, body)
	if _, err := client.Do(req); !errors.Is(err, tenancy.CodeTenantUnbound) || !body.closed {
		t.Errorf("unbound POST: %v, body closed %v", err, body.closed)
	}
	if n := hits.Load() - before; n != 0 {
		t.Errorf("%d refused requests reached the server", n)
	}
	// What leaves, exactly: one value of the bound tenant, or no header at
	// all on a tenant-global request, whatever blank value was set by hand.
	var sent http.Header
	record := &http.Client{Transport: &tenanthttp.Transport{Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = r.Header
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
	})}}
	for _, c := range []struct {
		ctx  context.Context
		want []string
	}{{bound, []string{tenantA.String()}}, {tenancy.WithGlobal(bound), nil}} {
		req, _ := http.NewRequestWithContext(c.ctx, http.MethodGet, next.URL, nil)
		req.Header["X-Tenant-Id"] = []string{" "}
		resp, err := record.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, present := sent["X-Tenant-Id"]; !slices.Equal(got, c.want) || present != (c.want != nil) {
			t.Errorf("sent %q (present %v), want %q", got, present, c.want)
		}
	}
	bad := &http.Client{Transport: &tenanthttp.Transport{Base: base, Header: "X-Tenant-ID "}}
	req, _ = http.NewRequestWithContext(bound, http.MethodGet, next.URL, nil)
	if _, err := bad.Do(req); !errors.Is(err, tenancy.CodeTenantSourceInvalid) {
		t.Errorf("a header name no request can carry: %v", err)
	}
}
