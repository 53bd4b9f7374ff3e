package tenanthttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

type greeting struct{ text string }

type catchAllDeps struct {
	fx.In
	Greeting *greeting
}

// A tenant catch-all must not answer for operator or blocked paths: they
// are shadowed with 404 on the tenant listener.
func TestOperatorPathsShadowTenantCatchAll(t *testing.T) {
	var srv *tenanthttp.Server
	app := fx.New(fx.NopLogger,
		tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true}),
		fx.Supply(&greeting{"hello"}),
		tenanthttp.RouteWith("/", tenanthttp.Tenant, func(d catchAllDeps) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id, _ := tenancy.FromContext(r.Context())
				_, _ = io.WriteString(w, d.Greeting.text+" "+id.String())
			})
		}),
		tenanthttp.Route("GET /metrics", tenanthttp.Operator, http.NotFoundHandler()),
		tenanthttp.Route("/internal/", tenanthttp.Blocked, nil),
		fx.Populate(&srv),
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	c := client{t, &http.Client{Transport: tr}}
	defer func() {
		tr.CloseIdleConnections()
		_ = app.Stop(ctx)
	}()
	ten := "http://" + srv.TenantAddr()
	if code, body, _ := c.do("GET", ten+"/anything", tenantA.String(), ""); code != 200 || body != "hello "+tenantA.String() {
		t.Fatalf("catch-all: %d %q", code, body)
	}
	for _, p := range []string{"/healthz", "/tenancy/matrix", "/metrics", "/internal/x"} {
		for _, method := range []string{"GET", "POST"} {
			if code, body, _ := c.do(method, ten+p, "", ""); code != http.StatusNotFound {
				t.Errorf("%s %s answered by the tenant catch-all: %d %q", method, p, code, body)
			}
		}
	}
}

// The handlers are usable without listeners, for users' own unit tests.
func TestHandlersWithoutListeners(t *testing.T) {
	var srv *tenanthttp.Server
	tenancytest.RequireWires(t,
		tenanthttp.Module(tenanthttp.Config{TrustedProxy: true}),
		tenanthttp.Route("GET /who", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, _ := tenancy.FromContext(r.Context())
			_, _ = io.WriteString(w, id.String())
		})),
		fx.Populate(&srv))
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/who", nil)
	r.Header.Set("X-Tenant-ID", tenantB.String())
	srv.TenantHandler().ServeHTTP(rec, r)
	if rec.Code != 200 || rec.Body.String() != tenantB.String() {
		t.Errorf("tenant handler: %d %q", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	r = httptest.NewRequest("GET", "/who", nil)
	r.Host = "localhost" // httptest's example.com is no name the operator listener answers
	srv.OperatorHandler().ServeHTTP(rec, r)
	if rec.Code != http.StatusNotFound {
		t.Errorf("tenant route on the operator handler: %d", rec.Code)
	}
}

// Concurrent requests under many tenants each see exactly their own
// tenant bound (run under -race).
func TestConcurrentBinding(t *testing.T) {
	var srv *tenanthttp.Server
	tenancytest.RequireWires(t,
		tenanthttp.Module(tenanthttp.Config{TrustedProxy: true}),
		tenanthttp.Route("GET /who", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, err := tenancy.Require(r.Context())
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			_, _ = io.WriteString(w, id.String())
		})),
		fx.Populate(&srv))
	h := srv.TenantHandler()
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				b := tenantA.Bytes()
				b[15] = byte(g)
				b[14] = byte(i)
				id, _ := tenancy.IDFromBytes(b)
				r := httptest.NewRequest("GET", "/who", nil)
				r.Header.Set("X-Tenant-ID", strings.ToUpper(id.String()))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				if rec.Code != 200 || rec.Body.String() != id.String() {
					t.Errorf("request for %v saw %d %q", id, rec.Code, rec.Body.String())
					return
				}
			}
		}()
	}
	wg.Wait()
}
