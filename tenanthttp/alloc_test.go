package tenanthttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

func contextWithClaim(r *http.Request, id tenancy.ID) context.Context {
	return context.WithValue(r.Context(), claimKey{}, id)
}

var (
	sinkID  tenancy.ID
	sinkCtx context.Context
	sinkReq *http.Request
)

func hotRequest(tb testing.TB) (*tenanthttp.Resolver, *http.Request) {
	tb.Helper()
	res, err := tenanthttp.NewResolver(tenanthttp.Config{TrustedProxy: true, Host: hosts})
	if err != nil {
		tb.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/orders", nil)
	r.Host = "alpha.example.com"
	r.Header.Set("X-Tenant-ID", "A1B2C3D4-E5F6-4789-ABCD-EF0123456789")
	return res, r
}

// TestHotPathAllocations: parsing the header and resolving
// the tenant (header and host label agreeing) allocate nothing. Binding it
// costs exactly what net/http and context require: tenancy.WithTenant's
// context.WithValue (the value box and the valueCtx) and r.WithContext's
// shallow copy of the request.
func TestHotPathAllocations(t *testing.T) {
	res, r := hotRequest(t)
	values := r.Header["X-Tenant-Id"]
	if n := testing.AllocsPerRun(200, func() { sinkID, _, _ = tenanthttp.ParseHeader(values) }); n != 0 {
		t.Errorf("ParseHeader allocates %v times", n)
	}
	if n := testing.AllocsPerRun(200, func() { sinkID, _ = res.Resolve(r) }); n != 0 {
		t.Errorf("Resolve allocates %v times", n)
	}
	bad := []string{"not-a-uuid"}
	if n := testing.AllocsPerRun(200, func() { _, _, _ = tenanthttp.ParseHeader(bad) }); n != 0 {
		t.Errorf("ParseHeader refusal allocates %v times", n)
	}
	ctx := r.Context()
	bind := testing.AllocsPerRun(200, func() { sinkCtx = tenancy.WithTenant(ctx, tenantA) })
	clone := testing.AllocsPerRun(200, func() { sinkReq = r.WithContext(ctx) })
	t.Logf("tenancy.WithTenant: %v allocs; r.WithContext: %v allocs", bind, clone)
	h := res.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		sinkID, _ = tenancy.FromContext(r.Context())
	}))
	var w nopWriter
	// Everything the middleware allocates is the binding itself.
	if n := testing.AllocsPerRun(200, func() { h.ServeHTTP(w, r) }); n != bind+clone {
		t.Errorf("middleware allocates %v times, want %v (binding only)", n, bind+clone)
	} else {
		t.Logf("middleware per request: %v allocs", n)
	}
}

type nopWriter struct{}

func (nopWriter) Header() http.Header         { return nil }
func (nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (nopWriter) WriteHeader(int)             {}

func BenchmarkParseHeader(b *testing.B) {
	values := []string{"A1B2C3D4-E5F6-4789-ABCD-EF0123456789"}
	b.ReportAllocs()
	for b.Loop() {
		sinkID, _, _ = tenanthttp.ParseHeader(values)
	}
}

func BenchmarkResolve(b *testing.B) {
	res, r := hotRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		sinkID, _ = res.Resolve(r)
	}
}

func BenchmarkMiddleware(b *testing.B) {
	res, r := hotRequest(b)
	h := res.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		sinkID, _ = tenancy.FromContext(r.Context())
	}))
	var w nopWriter
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
