package tenantadmin_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/tenantwire/tenantwire/tenantadmin"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// TestAdmissionExemptsOperatorEndpoints: with every tenant limited to one
// request and one in flight on the tenant listener, the operator
// endpoints about a tenant, reads and steps alike, are all served: the
// boundary's admission never runs on the operator listener.
func TestAdmissionExemptsOperatorEndpoints(t *testing.T) {
	adm := &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 0.001, Burst: 1, InFlight: 1}}
	f := newMemFixtureOn(t, tenanthttp.Config{TrustedProxy: true, Admission: adm}, tenantadmin.Config{},
		tenanthttp.Route("GET /who", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })))
	who := func() int {
		r, _ := http.NewRequest("GET", "http://"+f.srv.TenantAddr()+"/who", nil)
		r.Header.Set("X-Tenant-ID", a.String())
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if st := who(); st != 200 {
		t.Fatalf("the tenant's first request: %d", st)
	}
	if st := who(); st != http.StatusTooManyRequests {
		t.Fatalf("the tenant's second request: %d, want 429", st)
	}
	for range 3 {
		for _, r := range []req{
			{method: "GET", path: "/tenants/" + a.String()},
			{method: "POST", path: "/tenants/" + a.String() + "/suspend", header: jsonCT},
			{method: "POST", path: "/tenants/" + a.String() + "/resume", header: jsonCT},
		} {
			if st, body := f.do(r); st != 200 {
				t.Fatalf("%s %s while the tenant is at its limit: %d %v", r.method, r.path, st, body)
			}
		}
	}
}
