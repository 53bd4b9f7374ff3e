package tenantadmin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantadmin"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// memFixture is an app on the memory backend with the operator surface:
// each tenant gets a cache entry, so a test can tell whether an offboard
// ran.
type memFixture struct {
	t       *testing.T
	srv     *tenanthttp.Server
	tenants *modules.Tenants
	cache   *memory.Cache
	base    string // operator base URL
	port    string // operator listener's port
}

func newMemFixture(t *testing.T, cfg tenantadmin.Config, extra ...fx.Option) *memFixture {
	t.Helper()
	return newMemFixtureOn(t, tenanthttp.Config{TrustedProxy: true}, cfg, extra...)
}

// newMemFixtureOn is newMemFixture with the boundary configured by hc
// (its addresses replaced by loopback ones).
func newMemFixtureOn(t *testing.T, hc tenanthttp.Config, cfg tenantadmin.Config, extra ...fx.Option) *memFixture {
	t.Helper()
	f := &memFixture{t: t}
	hc.TenantAddr, hc.OperatorAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Registry = migrate.NewMemoryRegistry()
	opts := append([]fx.Option{fx.NopLogger, modules.Lifecycle(),
		memory.Module("mem", modules.AllowTeardown(), memory.CacheRoute("carts", memory.CacheConfig{Keys: naming.PerTenant("carts")})),
		tenanthttp.Module(hc),
		tenantadmin.Module(cfg),
		fx.Populate(&f.srv, &f.tenants, &f.cache)}, extra...)
	app := fx.New(opts...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	f.base = "http://" + f.srv.OperatorAddr()
	_, f.port, _ = net.SplitHostPort(f.srv.OperatorAddr())
	for _, id := range []tenancy.ID{a, b} {
		if err := f.cache.Set(tenancy.WithTenant(context.Background(), id), "k", []byte("v"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// hasData reports whether id's cache entry is still there (read with the
// tenant resumed for the read, then put back as it was).
func (f *memFixture) hasData(id tenancy.ID) bool {
	f.t.Helper()
	if f.tenants.Suspended(id) {
		f.tenants.Resume(id)
		defer f.tenants.Suspend(id)
	}
	_, ok, err := f.cache.Get(tenancy.WithTenant(context.Background(), id), "k")
	if err != nil {
		f.t.Fatal(err)
	}
	return ok
}

// req is one request to the operator listener: host replaces the Host
// header when set, and header is sent as given (no Content-Type unless it
// names one).
type req struct {
	method, path string
	host         string
	header       http.Header
	body         string
}

func (f *memFixture) do(r req) (int, map[string]any) {
	f.t.Helper()
	hr, err := http.NewRequest(r.method, f.base+r.path, strings.NewReader(r.body))
	if err != nil {
		f.t.Fatal(err)
	}
	if r.body == "" {
		hr.Body, hr.ContentLength = http.NoBody, 0
	}
	if r.host != "" {
		hr.Host = strings.ReplaceAll(r.host, "PORT", f.port)
	}
	for k, v := range r.header {
		hr.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil && resp.StatusCode != 404 {
		f.t.Fatalf("%s %s: %d, body not JSON: %v", r.method, r.path, resp.StatusCode, err)
	}
	return resp.StatusCode, m
}

var jsonCT = http.Header{"Content-Type": {"application/json"}}

func with(h http.Header, k, v string) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	out.Set(k, v)
	return out
}

// TestBrowserRequestsForbidden: what a web page can make a browser send
// (a DNS-rebinding Host, a cross-site Origin or Sec-Fetch-Site, refused by
// the operator listener; a form or text/plain post, refused here) is
// refused with operator_request_forbidden before any handler runs: the
// list is not in the answer, B is neither suspended nor offboarded and its
// data stays.
func TestBrowserRequestsForbidden(t *testing.T) {
	f := newMemFixture(t, tenantadmin.Config{})
	B := b.String()
	off := "/tenants/" + B + "/offboard?confirm=" + B
	for name, r := range map[string]req{
		"rebinding Host":               {method: "GET", path: "/tenants", host: "attacker.example:PORT"},
		"rebinding Host without port":  {method: "GET", path: "/tenants", host: "attacker.example"},
		"loopback name, other port":    {method: "GET", path: "/tenants", host: "127.0.0.1:1"},
		"loopback name, trailing dot":  {method: "GET", path: "/tenants", host: "localhost.:PORT"},
		"loopback as a subdomain":      {method: "GET", path: "/tenants/" + B, host: "localhost.attacker.example:PORT"},
		"foreign Origin on a read":     {method: "GET", path: "/tenants", header: http.Header{"Origin": {"https://attacker.example"}}},
		"rebinding Origin and Host":    {method: "GET", path: "/tenants", host: "attacker.example:PORT", header: http.Header{"Origin": {"http://attacker.example:PORT"}}},
		"null Origin":                  {method: "GET", path: "/tenants", header: http.Header{"Origin": {"null"}}},
		"Sec-Fetch-Site cross-site":    {method: "GET", path: "/tenants", header: http.Header{"Sec-Fetch-Site": {"cross-site"}}},
		"Sec-Fetch-Site same-site":     {method: "POST", path: off, header: with(jsonCT, "Sec-Fetch-Site", "same-site")},
		"cross-site text/plain post":   {method: "POST", path: off, header: http.Header{"Origin": {"https://attacker.example"}, "Content-Type": {"text/plain"}}},
		"foreign Origin, JSON post":    {method: "POST", path: off, header: with(jsonCT, "Origin", "https://attacker.example")},
		"text/plain post":              {method: "POST", path: off, header: http.Header{"Content-Type": {"text/plain;charset=UTF-8"}}},
		"form post":                    {method: "POST", path: off, header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}},
		"multipart post":               {method: "POST", path: off, header: http.Header{"Content-Type": {"multipart/form-data; boundary=x"}}, body: "--x--\r\n"},
		"post with no Content-Type":    {method: "POST", path: off},
		"form suspend":                 {method: "POST", path: "/tenants/" + B + "/suspend", header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}},
		"JSON-looking text/plain post": {method: "POST", path: off, header: http.Header{"Content-Type": {"text/plain"}}, body: "{}"},
	} {
		st, body := f.do(r)
		if st != 403 || body["code"] != string(tenancy.CodeOperatorRequestForbidden) || body["fix"] == "" || body["tenants"] != nil {
			t.Errorf("%s: %d %v, want 403 %s", name, st, body, tenancy.CodeOperatorRequestForbidden)
		}
		if f.tenants.Suspended(b) || !f.hasData(b) {
			t.Fatalf("%s: the refused request suspended or offboarded B", name)
		}
	}
	// What a command sends is served: loopback names with and without the
	// listener's port, and a same-origin or user-typed fetch.
	for name, r := range map[string]req{
		"localhost":            {method: "GET", path: "/tenants", host: "localhost"},
		"localhost:port":       {method: "GET", path: "/tenants", host: "LocalHost:PORT"},
		"[::1]:port":           {method: "GET", path: "/tenants", host: "[::1]:PORT"},
		"[::1]":                {method: "GET", path: "/tenants", host: "[::1]"},
		"same Origin":          {method: "GET", path: "/tenants", header: http.Header{"Origin": {"http://127.0.0.1:" + f.port}}},
		"Sec-Fetch-Site none":  {method: "GET", path: "/tenants", header: http.Header{"Sec-Fetch-Site": {"none"}}},
		"JSON post, {} body":   {method: "POST", path: "/tenants/" + B + "/provision?dry_run=1", header: jsonCT, body: " {} "},
		"JSON post with param": {method: "POST", path: "/tenants/" + B + "/provision?dry_run=1", header: with(jsonCT, "Content-Type", "application/json; charset=utf-8")},
	} {
		if st, body := f.do(r); st != 200 {
			t.Errorf("%s: %d %v, want 200", name, st, body)
		}
	}
	if st, body := f.do(req{method: "POST", path: off, header: jsonCT}); st != 200 || body["ok"] != true || f.hasData(b) {
		t.Errorf("the operator's own offboard: %d %v", st, body)
	}
}

// TestParametersReadStrictly: a query that does not parse whole, repeats
// or misspells a parameter, or a body that carries one, is refused with
// operator_request_invalid; a dry run is dry_run=1 and nothing else. The
// misspelt dry runs of provision leave A suspended (a real provision
// resumes it); those of offboard leave B served with its data.
func TestParametersReadStrictly(t *testing.T) {
	f := newMemFixture(t, tenantadmin.Config{})
	f.tenants.Suspend(a)
	A, B := a.String(), b.String()
	for _, q := range []string{
		"dry_run=1;", "dry_run=1;x=2", "dry_run=1%zz", "dry_run=1%", "dry_run=true", "dry_run=0", "dry_run=", "dry_run",
		"DRY_RUN=1", "Dry_Run=1", "dry-run=1", "dry_run=1&dry_run=1", "dry_run=1&", "&dry_run=1", "dry_run=1&&x", "dry_run=+1", "dry_run=1+",
		"%zz=1", "=1", "dry_run=1&confirm=" + A,
	} {
		st, body := f.do(req{method: "POST", path: "/tenants/" + A + "/provision?" + q, header: jsonCT})
		wantCode(t, "provision ?"+q, st, body, 400, tenancy.CodeOperatorRequestInvalid)
		if !f.tenants.Suspended(a) {
			t.Fatalf("provision ?%s ran for real: A was resumed", q)
		}
		st, body = f.do(req{method: "POST", path: "/tenants/" + B + "/offboard?confirm=" + B + "&" + q, header: jsonCT})
		wantCode(t, "offboard ?confirm&"+q, st, body, 400, tenancy.CodeOperatorRequestInvalid)
		if f.tenants.Suspended(b) || !f.hasData(b) {
			t.Fatalf("offboard ?confirm&%s ran for real", q)
		}
	}
	for name, body := range map[string]string{
		"form body":    "dry_run=1",
		"JSON body":    `{"dry_run":1}`,
		"JSON string":  `"dry_run=1"`,
		"confirm body": "confirm=" + B,
		"padded {}":    "{}" + strings.Repeat(" ", 70) + "x",
	} {
		st, got := f.do(req{method: "POST", path: "/tenants/" + A + "/provision", header: jsonCT, body: body})
		wantCode(t, "provision with a "+name, st, got, 400, tenancy.CodeOperatorRequestInvalid)
		st, got = f.do(req{method: "POST", path: "/tenants/" + B + "/offboard?confirm=" + B, header: jsonCT, body: body})
		wantCode(t, "offboard with a "+name, st, got, 400, tenancy.CodeOperatorRequestInvalid)
		if !f.tenants.Suspended(a) || f.tenants.Suspended(b) || !f.hasData(b) {
			t.Fatalf("a request with a %s ran", name)
		}
	}
	for _, r := range []req{
		{method: "GET", path: "/tenants", body: "limit=1"},
		{method: "GET", path: "/tenants?limit=1;"}, {method: "GET", path: "/tenants?limit=01"}, {method: "GET", path: "/tenants?limit=1&limit=2"},
		{method: "GET", path: "/tenants/" + A + "?x"}, {method: "POST", path: "/tenants/" + B + "/suspend?;", header: jsonCT},
		{method: "POST", path: "/tenants/" + B + "/suspend", header: jsonCT, body: "{}x"},
	} {
		st, body := f.do(r)
		wantCode(t, r.method+" "+r.path+" "+r.body, st, body, 400, tenancy.CodeOperatorRequestInvalid)
	}
	if f.tenants.Suspended(b) {
		t.Fatal("a refused suspend suspended B")
	}
	// dry_run=1 exactly is a dry run (an escape that decodes to it too).
	for _, q := range []string{"dry_run=1", "dry_run=%31"} {
		st, body := f.do(req{method: "POST", path: "/tenants/" + A + "/provision?" + q, header: jsonCT})
		if st != 200 || body["dry_run"] != true || !f.tenants.Suspended(a) {
			t.Errorf("provision ?%s: %d %v", q, st, body)
		}
	}
}

// TestAuthentication: with Config.Token, a request without the bearer
// token or with another is forbidden and nothing runs; Remote sends it.
// Config.Authenticate refuses what it returns an error for.
func TestAuthentication(t *testing.T) {
	f := newMemFixture(t, tenantadmin.Config{Token: "s3cret"})
	S := "/tenants/" + b.String() + "/suspend"
	for name, h := range map[string]http.Header{
		"no token":    jsonCT,
		"wrong token": with(jsonCT, "Authorization", "Bearer s3cre"),
		"basic":       with(jsonCT, "Authorization", "Basic s3cret"),
		"bare token":  with(jsonCT, "Authorization", "s3cret"),
		"empty token": with(jsonCT, "Authorization", "Bearer "),
	} {
		st, body := f.do(req{method: "POST", path: S, header: h})
		wantCode(t, name, st, body, 403, tenancy.CodeOperatorRequestForbidden)
	}
	if f.tenants.Suspended(b) {
		t.Fatal("an unauthenticated suspend ran")
	}
	ctx := context.Background()
	var out strings.Builder
	if err := tenantadmin.Run(ctx, f.srv.OperatorAddr(), []string{"suspend", b.String()}, &out); tenancy.CodeOf(err) != tenancy.CodeOperatorRequestForbidden || tenantadmin.ExitCode(err) != 2 {
		t.Errorf("Run without the token: %v", err)
	}
	if st, body := f.do(req{method: "POST", path: "/tenants/" + a.String() + "/suspend", header: with(jsonCT, "Authorization", "bearer s3cret")}); st != 200 || !f.tenants.Suspended(a) {
		t.Errorf("a lower-case bearer scheme: %d %v", st, body)
	}
	if err := (tenantadmin.Remote{Addr: f.srv.OperatorAddr(), Token: "s3cret"}).Run(ctx, []string{"suspend", b.String()}, &out); err != nil || !f.tenants.Suspended(b) {
		t.Errorf("Remote with the token: %v", err)
	}

	g := newMemFixture(t, tenantadmin.Config{Authenticate: func(r *http.Request) error {
		if r.Header.Get("X-Operator") != "ops" {
			return errors.New("not an operator")
		}
		return nil
	}})
	st, body := g.do(req{method: "POST", path: S, header: jsonCT})
	wantCode(t, "Authenticate refusing", st, body, 403, tenancy.CodeOperatorRequestForbidden)
	if g.tenants.Suspended(b) || !strings.Contains(body["error"].(string), "not an operator") {
		t.Errorf("Authenticate refusing: %v, suspended %v", body, g.tenants.Suspended(b))
	}
	if st, body := g.do(req{method: "POST", path: S, header: with(jsonCT, "X-Operator", "ops")}); st != 200 || !g.tenants.Suspended(b) {
		t.Errorf("Authenticate accepting: %d %v", st, body)
	}
}

// TestOperatorHostsConfigured: the endpoints answer the names of
// tenanthttp.Config.OperatorHosts, the one list the operator listener
// checks, and no other.
func TestOperatorHostsConfigured(t *testing.T) {
	f := newMemFixtureOn(t, tenanthttp.Config{TrustedProxy: true, OperatorHosts: []string{"ops.internal", "ops.example:443"}}, tenantadmin.Config{})
	S := "/tenants/" + b.String() + "/suspend"
	for host, want := range map[string]int{
		"ops.internal": 200, "OPS.internal:PORT": 200, "ops.example:443": 200,
		"ops.example": 403, "ops.internal:443": 403, "localhost:PORT": 403, "127.0.0.1:PORT": 403,
	} {
		if st, body := f.do(req{method: "GET", path: "/tenants", host: host}); st != want {
			t.Errorf("Host %s: %d %v, want %d", host, st, body, want)
		}
	}
	st, body := f.do(req{method: "POST", path: S, host: "localhost", header: jsonCT})
	wantCode(t, "suspend by a name not listed", st, body, 403, tenancy.CodeOperatorRequestForbidden)
	if f.tenants.Suspended(b) {
		t.Fatal("a suspend sent by a name not listed ran")
	}
	if st, body := f.do(req{method: "POST", path: S, host: "ops.internal", header: jsonCT}); st != 200 || !f.tenants.Suspended(b) {
		t.Errorf("suspend by a listed name: %d %v", st, body)
	}
}

// TestEndpointsSwitchedOff: Config.Off unmounts endpoints (404, nothing
// runs) and leaves the others; declaring an endpoint's path Blocked does
// the same instead of route_class_overlap; a Blocked path that only
// partly overlaps one is still refused.
func TestEndpointsSwitchedOff(t *testing.T) {
	B := b.String()
	off := req{method: "POST", path: "/tenants/" + B + "/offboard?confirm=" + B, header: jsonCT}
	list := req{method: "GET", path: "/tenants"}
	check := func(name string, f *memFixture, wantOff, wantList int) {
		t.Helper()
		if st, _ := f.do(off); st != wantOff || !f.hasData(b) {
			t.Errorf("%s: offboard %d (want %d), data there %v", name, st, wantOff, f.hasData(b))
		}
		if st, _ := f.do(list); st != wantList {
			t.Errorf("%s: list %d, want %d", name, st, wantList)
		}
	}
	check("Off", newMemFixture(t, tenantadmin.Config{Off: []tenantadmin.Endpoint{tenantadmin.Offboard}}), 404, 200)
	check("Blocked offboard", newMemFixture(t, tenantadmin.Config{}, tenanthttp.Route("/tenants/{id}/offboard", tenanthttp.Blocked, nil)), 404, 200)
	check("Blocked all", newMemFixture(t, tenantadmin.Config{}, tenanthttp.Route("/tenants/", tenanthttp.Blocked, nil), tenanthttp.Route("/tenants", tenanthttp.Blocked, nil)), 404, 404)

	app := fx.New(fx.NopLogger, modules.Lifecycle(), memory.Module("mem"),
		tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true}),
		tenantadmin.Module(tenantadmin.Config{Registry: migrate.NewMemoryRegistry()}),
		tenanthttp.Route("/tenants/"+B, tenanthttp.Blocked, nil))
	if tenancy.CodeOf(app.Err()) != tenancy.CodeRouteClassOverlap {
		t.Errorf("a Blocked path inside GET /tenants/{id}: %v", app.Err())
	}
	app = fx.New(fx.NopLogger, modules.Lifecycle(), memory.Module("mem"),
		tenantadmin.Module(tenantadmin.Config{Registry: migrate.NewMemoryRegistry(), Off: []tenantadmin.Endpoint{"destroy"}}))
	if tenancy.CodeOf(app.Err()) != tenancy.CodeTenantAdminUnwired {
		t.Errorf("Off naming no endpoint: %v", app.Err())
	}
}

// TestRunUnknownCommand: a subcommand Run does not know is refused as
// such, whatever follows it, before anything is sent.
func TestRunUnknownCommand(t *testing.T) {
	for _, args := range [][]string{{"bogus"}, {"bogus", a.String()}, {"List"}} {
		err := tenantadmin.Run(context.Background(), "127.0.0.1:1", args, nil)
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeOperatorRequestInvalid || !strings.Contains(te.Detail, "unknown command") || tenantadmin.ExitCode(err) != 2 {
			t.Errorf("Run %v: %v", args, err)
		}
	}
}
