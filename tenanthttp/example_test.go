package tenanthttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// The boundary resolves the tenant of each request once and binds it into
// the request's context; handlers and adapters read it from there. The
// tenant handler is built during fx.New, so this example serves requests
// through it directly, without opening a listener.
func Example() {
	whoami := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := tenancy.Require(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "tenant", id)
	})
	var srv *tenanthttp.Server
	app := fx.New(fx.NopLogger,
		tenanthttp.Module(tenanthttp.Config{
			// A proxy in front sets X-Tenant-ID and strips the client's;
			// header mode refuses to boot without this assertion.
			TrustedProxy: true,
		}),
		tenanthttp.Route("GET /whoami", tenanthttp.Tenant, whoami),
		fx.Populate(&srv),
	)
	if err := app.Err(); err != nil {
		fmt.Println(err)
		return
	}
	for _, header := range []string{"7c9e6679-7425-40de-944b-e07fc1f90ae7", "", "not-a-uuid"} {
		req := httptest.NewRequest("GET", "/whoami", nil)
		if header != "" {
			req.Header.Set(tenanthttp.DefaultHeader, header)
		}
		rec := httptest.NewRecorder()
		srv.TenantHandler().ServeHTTP(rec, req)
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	// Output:
	// 200 tenant 7c9e6679-7425-40de-944b-e07fc1f90ae7
	// 200 tenant 00000000-0000-0000-0000-000000000001
	// 400 {"error":"invalid tenant header (must be a UUID)","code":"invalid_tenant_header"}
}

// Header mode without a trusted proxy is refused during fx.New: any client
// could name any tenant.
func ExampleModule_untrustedHeader() {
	app := fx.New(fx.NopLogger, tenanthttp.Module(tenanthttp.Config{}))
	fmt.Println(tenancy.CodeOf(app.Err()))
	// Output:
	// trusted_proxy_required
}

// A service whose every request must name its tenant answers one that
// names none with 400 and tenant_required, instead of serving it as the
// default tenant.
func ExampleConfig_requireTenant() {
	res, err := tenanthttp.NewResolver(tenanthttp.Config{TrustedProxy: true, RequireTenant: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := res.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := tenancy.FromContext(r.Context())
		fmt.Fprintln(w, "tenant", id)
	}))
	for _, header := range []string{"7c9e6679-7425-40de-944b-e07fc1f90ae7", ""} {
		req := httptest.NewRequest("GET", "/", nil)
		if header != "" {
			req.Header.Set(tenanthttp.DefaultHeader, header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Body.String())
	}
	// Output:
	// 200 tenant 7c9e6679-7425-40de-944b-e07fc1f90ae7
	//
	// 400 {"error":"the request names no tenant","code":"tenant_required"}
}

// Admission gives each tenant its own limits: here two requests at once
// and one a second after that. The third request of one tenant in the
// same instant is answered 429 with Retry-After, while another tenant is
// served.
func ExampleAdmission() {
	var srv *tenanthttp.Server
	app := fx.New(fx.NopLogger,
		tenanthttp.Module(tenanthttp.Config{
			TrustedProxy: true,
			Admission:    &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 1, Burst: 2}},
		}),
		tenanthttp.Route("GET /orders", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintln(w, "orders")
		})),
		fx.Populate(&srv),
	)
	if err := app.Err(); err != nil {
		fmt.Println(err)
		return
	}
	for _, tenant := range []string{"7c9e6679-7425-40de-944b-e07fc1f90ae7", "7c9e6679-7425-40de-944b-e07fc1f90ae7",
		"7c9e6679-7425-40de-944b-e07fc1f90ae7", "3f2504e0-4f89-41d3-9a0c-0305e82c3301"} {
		req := httptest.NewRequest("GET", "/orders", nil)
		req.Header.Set(tenanthttp.DefaultHeader, tenant)
		rec := httptest.NewRecorder()
		srv.TenantHandler().ServeHTTP(rec, req)
		fmt.Print(rec.Code, " ", rec.Header().Get("Retry-After"), " ", rec.Body.String())
		if rec.Code != 200 {
			fmt.Println()
		}
	}
	// Output:
	// 200  orders
	// 200  orders
	// 429 1 {"error":"the tenant is over its request rate, retry later","code":"tenant_rate_limited"}
	// 200  orders
}
