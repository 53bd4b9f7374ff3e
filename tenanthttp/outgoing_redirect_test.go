package tenanthttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// headerLog is a loopback server that records the tenant header values
// (every spelling, as received) of each request it answers.
type headerLog struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string][]string // path -> X-Tenant-Id values
}

func newHeaderLog(t *testing.T, h func(w http.ResponseWriter, r *http.Request) bool) *headerLog {
	l := &headerLog{seen: map[string][]string{}}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen[r.URL.Path] = append([]string{}, r.Header.Values(tenanthttp.DefaultHeader)...)
		l.mu.Unlock()
		if h == nil || !h(w, r) {
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(l.Close)
	return l
}

func (l *headerLog) got(path string) ([]string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.seen[path]
	return v, ok
}

// TestTransportRedirectKeepsTenantOnItsHost: the tenant header follows a
// redirect on the same host and never one to another host, neither the
// one the transport sets nor the same tenant set by hand (which net/http
// copies onto every hop).
func TestTransportRedirectKeepsTenantOnItsHost(t *testing.T) {
	third := newHeaderLog(t, nil)
	origin := newHeaderLog(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, third.URL+"/landed", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/landed", http.StatusFound)
		default:
			return false
		}
		return true
	})
	bounce := newHeaderLog(t, func(w http.ResponseWriter, r *http.Request) bool {
		http.Redirect(w, r, origin.URL+"/home", http.StatusFound)
		return true
	})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &tenanthttp.Transport{Base: base}}
	bound := tenancy.WithTenant(context.Background(), tenantA)
	do := func(url string, byHand bool) {
		t.Helper()
		req, _ := http.NewRequestWithContext(bound, http.MethodGet, url, nil)
		if byHand {
			req.Header["x-tenant-id"] = []string{tenantA.String()}
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		resp.Body.Close()
	}
	want := []string{tenantA.String()}
	for _, byHand := range []bool{false, true} {
		do(origin.URL+"/here", byHand)
		if got, _ := origin.got("/landed"); len(got) != 1 || got[0] != want[0] {
			t.Errorf("same-host redirect (set by hand %v): %q, want %q", byHand, got, want)
		}
		do(origin.URL+"/away", byHand)
		if got, ok := third.got("/landed"); !ok || len(got) != 0 {
			t.Errorf("redirect to another host (set by hand %v): it received %q (reached %v)", byHand, got, ok)
		}
		if got, _ := origin.got("/away"); len(got) != 1 || got[0] != want[0] {
			t.Errorf("first hop (set by hand %v): %q, want %q", byHand, got, want)
		}
		do(bounce.URL+"/go", byHand)
		if got, _ := bounce.got("/go"); len(got) != 1 || got[0] != want[0] {
			t.Errorf("first hop to bounce (set by hand %v): %q, want %q", byHand, got, want)
		}
		if got, ok := origin.got("/home"); !ok || len(got) != 0 {
			t.Errorf("redirect from the first host to another (set by hand %v): %q (reached %v)", byHand, got, ok)
		}
	}
}

// TestTransportSeesEverySpelling: a tenant header set by hand under any
// spelling of its name is under the outgoing rule: another tenant is
// refused, any tenant under a tenant-global context is refused, and the
// same tenant leaves once, under the canonical name.
func TestTransportSeesEverySpelling(t *testing.T) {
	srv := newHeaderLog(t, nil)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &tenanthttp.Transport{Base: base}}
	bound := tenancy.WithTenant(context.Background(), tenantA)
	for _, spelling := range []string{"x-tenant-id", "X-TENANT-ID", "x-Tenant-Id"} {
		for name, c := range map[string]struct {
			ctx  context.Context
			val  string
			code tenancy.Code
		}{
			"other tenant":  {bound, tenantB.String(), tenancy.CodeTenantSourceConflict},
			"global":        {tenancy.WithGlobal(context.Background()), tenantB.String(), tenancy.CodeTenantSourceConflict},
			"global, bound": {tenancy.WithGlobal(bound), tenantA.String(), tenancy.CodeTenantSourceConflict},
		} {
			req, _ := http.NewRequestWithContext(c.ctx, http.MethodGet, srv.URL+"/"+spelling, nil)
			req.Header[spelling] = []string{c.val}
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			if !errors.Is(err, c.code) {
				t.Errorf("%s as %q: %v, want %s", name, spelling, err, c.code)
			}
			if got, ok := srv.got("/" + spelling); ok {
				t.Errorf("%s as %q: refused request reached the server with %q", name, spelling, got)
			}
		}
		req, _ := http.NewRequestWithContext(bound, http.MethodGet, srv.URL+"/same/"+spelling, nil)
		req.Header[spelling] = []string{tenantA.String()}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, _ := srv.got("/same/" + spelling); len(got) != 1 || got[0] != tenantA.String() {
			t.Errorf("same tenant as %q: the server received %q", spelling, got)
		}
		if req.Header[spelling][0] != tenantA.String() || len(req.Header) != 1 {
			t.Errorf("the caller's request was modified: %v", req.Header)
		}
	}
}
