package tenanthttp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// admitApp builds the boundary with adm and whoRoute, unstarted: tests
// drive its tenant handler (routing, resolution, admission) directly.
func admitApp(t *testing.T, adm *tenanthttp.Admission, opts ...fx.Option) *tenanthttp.Server {
	t.Helper()
	var srv *tenanthttp.Server
	app := fx.New(append([]fx.Option{fx.NopLogger, whoRoute, fx.Populate(&srv),
		tenanthttp.Module(tenanthttp.Config{TrustedProxy: true, Admission: adm})}, opts...)...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return srv
}

// get sends GET path naming tenant (none when "") through h and returns
// the status, the code the body names, and Retry-After.
func get(h http.Handler, path, tenant string) (status int, code, retryAfter string) {
	r := httptest.NewRequest("GET", path, nil)
	if tenant != "" {
		r.Header.Set("X-Tenant-ID", tenant)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var body struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	return w.Code, body.Code, w.Header().Get("Retry-After")
}

// A tenant over its rate is refused 429 with its code while another
// tenant, in the same instant and with the same limits, is served: each
// has its own bucket.
func TestAdmissionRateIsPerTenant(t *testing.T) {
	h := admitApp(t, &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 0.001, Burst: 2}}).TenantHandler()
	for i := range 2 {
		if st, code, _ := get(h, "/who", tenantA.String()); st != 200 {
			t.Fatalf("A request %d: %d %s", i, st, code)
		}
	}
	st, code, ra := get(h, "/who", tenantA.String())
	if st != http.StatusTooManyRequests || code != string(tenancy.CodeTenantRateLimited) || ra == "" {
		t.Fatalf("A over its burst: %d %q Retry-After %q, want 429 tenant_rate_limited", st, code, ra)
	}
	for i := range 2 {
		if st, code, _ := get(h, "/who", tenantB.String()); st != 200 {
			t.Fatalf("B request %d after A was limited: %d %s", i, st, code)
		}
	}
	if st, _, _ := get(h, "/who", tenantB.String()); st != http.StatusTooManyRequests {
		t.Fatalf("B over its own burst: %d", st)
	}
}

// Retry-After is the time until the tenant's next token, in whole seconds
// rounded up: at 0.25 requests a second an empty bucket refills in 4s; at
// 10 a second in 0.1s, said as 1.
func TestAdmissionRetryAfter(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want string
	}{{0.25, "4"}, {0.4, "3"}, {10, "1"}} {
		h := admitApp(t, &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: c.rate, Burst: 1}}).TenantHandler()
		if st, _, _ := get(h, "/who", tenantA.String()); st != 200 {
			t.Fatalf("rate %v: first request %d", c.rate, st)
		}
		if st, _, ra := get(h, "/who", tenantA.String()); st != 429 || ra != c.want {
			t.Errorf("rate %v: %d Retry-After %q, want 429 %s", c.rate, st, ra, c.want)
		}
	}
	// The refused request took no token: once the bucket has refilled,
	// the next request is served.
	h := admitApp(t, &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 20, Burst: 1}}).TenantHandler()
	get(h, "/who", tenantA.String())
	if st, _, _ := get(h, "/who", tenantA.String()); st != 429 {
		t.Fatalf("second request at once: %d", st)
	}
	time.Sleep(60 * time.Millisecond)
	if st, _, _ := get(h, "/who", tenantA.String()); st != 200 {
		t.Fatalf("after the refill: %d", st)
	}
}

// InFlight holds at exactly N under concurrent requests of one tenant over
// loopback: N reach the handler, every other is refused 429 with
// tenant_concurrency_limited, and once they end the tenant is served again.
// Another tenant is served meanwhile.
func TestAdmissionInFlightExactlyN(t *testing.T) {
	const n, clients = 3, 24
	var running, peak atomic.Int64
	arrived, release := make(chan struct{}, clients), make(chan struct{})
	blocking := tenanthttp.Route("GET /slow", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, _ := tenancy.FromContext(r.Context()); id != tenantA {
			return
		}
		now := running.Add(1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		arrived <- struct{}{}
		<-release
		running.Add(-1)
	}))
	srv := startApp(t, tenanthttp.Config{TrustedProxy: true, Admission: &tenanthttp.Admission{Default: tenanthttp.Limits{InFlight: n}}}, blocking)
	c := client{t, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}}
	defer c.c.CloseIdleConnections()
	url := "http://" + srv.TenantAddr() + "/slow"

	statuses := make(chan string, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			st, body, hdr := c.do("GET", url, tenantA.String(), "")
			statuses <- fmt.Sprintf("%d %s %s", st, body, hdr.Get("Retry-After"))
		})
	}
	// within fails the test instead of hanging when a request it waits
	// for never comes (the limit let one more in, which then blocks).
	within := func(ch <-chan struct{}, what string) {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never happened", what)
		}
	}
	for range n {
		within(arrived, "an admitted request reaching the handler")
	}
	refused := fmt.Sprintf(`429 {"error":"the tenant has too many requests in flight, retry later","code":"%s"} 1`, tenancy.CodeTenantConcurrencyLimited)
	for range clients - n {
		select {
		case got := <-statuses:
			if got != refused {
				t.Fatalf("a request beyond %d in flight: %q, want %q", n, got, refused)
			}
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatalf("a request beyond %d in flight was not refused (peak %d)", n, peak.Load())
		}
	}
	if st, _, _ := c.do("GET", url, tenantB.String(), ""); st != 200 {
		t.Fatalf("tenant B while A is at its limit: %d", st)
	}
	close(release)
	wg.Wait()
	for range n {
		if got := <-statuses; got != "200  " {
			t.Fatalf("an admitted request: %q", got)
		}
	}
	if p := peak.Load(); p != n {
		t.Fatalf("peak in flight %d, want exactly %d", p, n)
	}
	// Its requests ended (release is closed: the handler returns at
	// once), so the tenant is served again.
	if st, _, _ := c.do("GET", url, tenantA.String(), ""); st != 200 {
		t.Fatalf("A after its requests ended: %d", st)
	}
}

// Limits from the For hook (a plan lookup): each tenant gets its plan's,
// Tenants overrides the hook, and limits the hook returns that cannot be
// enforced refuse the request as an internal error, never serve it
// unlimited.
func TestAdmissionLimitsFromFor(t *testing.T) {
	tenantC := tenancy.MustParseID("c0c0c0c0-0000-4000-8000-00000000000c")
	plans := map[tenancy.ID]tenanthttp.Limits{
		tenantA: {Rate: 0.001, Burst: 1},  // a small plan
		tenantC: {Rate: 0.001, Burst: -1}, // a broken plan
	}
	var calls atomic.Int64
	h := admitApp(t, &tenanthttp.Admission{
		For: func(id tenancy.ID) tenanthttp.Limits {
			calls.Add(1)
			return plans[id]
		},
		Tenants: map[tenancy.ID]tenanthttp.Limits{tenancy.Default: {Rate: 0.001, Burst: 1}},
	}).TenantHandler()
	if st, _, _ := get(h, "/who", tenantA.String()); st != 200 {
		t.Fatalf("A's first: %d", st)
	}
	if st, code, _ := get(h, "/who", tenantA.String()); st != 429 || code != string(tenancy.CodeTenantRateLimited) {
		t.Fatalf("A over its plan: %d %s", st, code)
	}
	for range 20 { // B's plan has no limits
		if st, _, _ := get(h, "/who", tenantB.String()); st != 200 {
			t.Fatalf("B, unlimited: %d", st)
		}
	}
	if st, code, _ := get(h, "/who", tenantC.String()); st != 500 || code != tenanthttp.CodeInternal {
		t.Fatalf("C's invalid plan: %d %s, want 500 internal", st, code)
	}
	before := calls.Load()
	get(h, "/who", "")
	if st, _, _ := get(h, "/who", ""); st != 429 || calls.Load() != before {
		t.Fatalf("the default tenant, listed in Tenants: %d, For called %d times", st, calls.Load()-before)
	}
}

// State is bounded: 30,000 distinct tenants leave at most MaxTenants
// (10,000 by default) tracked. A tenant with a request in flight is never
// forgotten, so its InFlight bound holds through any churn of others.
func TestAdmissionStateBounded(t *testing.T) {
	for _, c := range []struct{ max, want int }{{0, tenanthttp.DefaultMaxTenants}, {100, 100}, {5000, 5000}} {
		adm := &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 100, Burst: 10, InFlight: 1}, MaxTenants: c.max}
		if err := adm.Check("tenanthttp"); err != nil {
			t.Fatal(err)
		}
		held, err := adm.Admit("tenanthttp", "GET /who", tenantA)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 30000 {
			id := tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+1))
			tk, err := adm.Admit("tenanthttp", "GET /who", id)
			if err != nil {
				t.Fatalf("tenant %d: %v", i, err)
			}
			tk.Done()
		}
		if got := adm.Tracked(); got != c.want {
			t.Errorf("MaxTenants %d: %d tenants tracked after 30,000, want %d", c.max, got, c.want)
		}
		if _, err := adm.Admit("tenanthttp", "GET /who", tenantA); !errors.Is(err, tenancy.CodeTenantConcurrencyLimited) {
			t.Errorf("MaxTenants %d: A's second request while its first is in flight: %v", c.max, err)
		}
		held.Done()
		tk, err := adm.Admit("tenanthttp", "GET /who", tenantA)
		if err != nil {
			t.Errorf("MaxTenants %d: A after its request ended: %v", c.max, err)
		}
		tk.Done()
	}
}

// A tenant with no limits (the zero Limits) is admitted with no state.
func TestAdmissionUnlimitedKeepsNoState(t *testing.T) {
	adm := &tenanthttp.Admission{Tenants: map[tenancy.ID]tenanthttp.Limits{tenantA: {InFlight: 1}}}
	for i := range 1000 {
		tk, err := adm.Admit("tenanthttp", "GET /who", tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		tk.Done()
	}
	if n := adm.Tracked(); n != 0 {
		t.Fatalf("%d tenants tracked, want 0", n)
	}
}

// Limits that cannot be enforced are refused at fx.New with
// tenant_limits_invalid naming the module, before any listener opens.
func TestAdmissionInvalidRefusedAtFxNew(t *testing.T) {
	for name, adm := range map[string]*tenanthttp.Admission{
		"rate without burst": {Default: tenanthttp.Limits{Rate: 5}},
		"burst without rate": {Default: tenanthttp.Limits{Burst: 5}},
		"negative rate":      {Default: tenanthttp.Limits{Rate: -1, Burst: 1}},
		"negative burst":     {Default: tenanthttp.Limits{Rate: 1, Burst: -1}},
		"NaN rate":           {Default: tenanthttp.Limits{Rate: nan(), Burst: 1}},
		"negative in flight": {Default: tenanthttp.Limits{InFlight: -1}},
		"a tenant's":         {Tenants: map[tenancy.ID]tenanthttp.Limits{tenantA: {Rate: 1}}},
		"negative max":       {MaxTenants: -1},
	} {
		app := fx.New(fx.NopLogger, whoRoute, tenanthttp.Module(tenanthttp.Config{TrustedProxy: true, Admission: adm}))
		var e *tenancy.Error
		if err := app.Err(); !errors.As(err, &e) || e.Code != tenancy.CodeTenantLimitsInvalid || e.Module != "tenanthttp" {
			t.Errorf("%s: %v, want tenant_limits_invalid from tenanthttp", name, err)
		}
	}
}

func nan() float64 { z := 0.0; return z / z }

// The operator listener is never limited, whatever the tenants' limits:
// the deployment's health and admin surfaces stay reachable while every
// tenant is at its limit. A request refused before it has a tenant (a
// malformed header) counts against no tenant.
func TestAdmissionExemptions(t *testing.T) {
	ops := tenanthttp.Route("GET /ops/status", tenanthttp.Operator, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv := admitApp(t, &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 0.001, Burst: 1, InFlight: 1}}, ops)
	for range 5 {
		if st, _, _ := get(srv.TenantHandler(), "/who", "not-a-uuid"); st != 400 {
			t.Fatalf("malformed header: %d", st)
		}
	}
	if st, _, _ := get(srv.TenantHandler(), "/who", ""); st != 200 {
		t.Fatalf("the default tenant after malformed requests: %d", st)
	}
	if st, _, _ := get(srv.TenantHandler(), "/who", ""); st != 429 {
		t.Fatalf("the default tenant's second request: %d", st)
	}
	for _, path := range []string{"/ops/status", "/healthz", "/readyz"} {
		for range 5 {
			r := httptest.NewRequest("GET", path, nil)
			r.Host = "localhost"
			w := httptest.NewRecorder()
			srv.OperatorHandler().ServeHTTP(w, r)
			if w.Code != 200 {
				t.Fatalf("operator %s: %d %s", path, w.Code, w.Body)
			}
		}
	}
}

// An admitted request allocates nothing in the limiter.
func TestAdmissionAllocations(t *testing.T) {
	adm := &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 1e9, Burst: 1 << 30, InFlight: 1 << 20}}
	if n := testing.AllocsPerRun(1000, func() {
		tk, err := adm.Admit("tenanthttp", "GET /who", tenantA)
		if err != nil {
			t.Fatal(err)
		}
		tk.Done()
	}); n != 0 {
		t.Fatalf("%v allocations per admitted request", n)
	}
}

// Up to MaxTenants, no tenant is forgotten, however the tenants fall on
// the limiter's shards: the first of 10,000 tenants, its bucket drained,
// is still refused after 9,999 others came, rather than starting again
// with a full one.
func TestAdmissionKeepsMaxTenants(t *testing.T) {
	adm := &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 0.001, Burst: 1}}
	ids := make([]tenancy.ID, tenanthttp.DefaultMaxTenants)
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+1))
		tk, err := adm.Admit("tenanthttp", "GET /who", ids[i])
		if err != nil {
			t.Fatalf("tenant %d's first request: %v", i, err)
		}
		tk.Done()
	}
	if n := adm.Tracked(); n != len(ids) {
		t.Fatalf("%d tracked, want %d", n, len(ids))
	}
	for i, id := range ids {
		if _, err := adm.Admit("tenanthttp", "GET /who", id); !errors.Is(err, tenancy.CodeTenantRateLimited) {
			t.Fatalf("tenant %d's second request: %v, want tenant_rate_limited (it was forgotten)", i, err)
		}
	}
}

// BenchmarkAdmit is the limiter alone: Admit and Done of an admitted
// request from parallel goroutines, on one tenant (every goroutine on one
// lock) and cycling over 10,000.
func BenchmarkAdmit(b *testing.B) {
	for _, tenants := range []int{1, 10000} {
		ids := make([]tenancy.ID, tenants)
		for i := range ids {
			ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+1))
		}
		adm := &tenanthttp.Admission{Default: tenanthttp.Limits{Rate: 1e12, Burst: 1 << 40, InFlight: 1 << 30}}
		b.Run(fmt.Sprint(tenants), func(b *testing.B) {
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tk, err := adm.Admit("tenanthttp", "GET /who", ids[int(next.Add(1))%tenants])
					if err != nil {
						b.Fatal(err)
					}
					tk.Done()
				}
			})
		})
	}
}
