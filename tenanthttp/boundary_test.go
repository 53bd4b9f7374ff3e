package tenanthttp_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// startApp starts the module on loopback listeners and stops it when the
// test ends.
func startApp(t *testing.T, cfg tenanthttp.Config, opts ...fx.Option) *tenanthttp.Server {
	t.Helper()
	cfg.TenantAddr, cfg.OperatorAddr = "127.0.0.1:0", "127.0.0.1:0"
	var srv *tenanthttp.Server
	app := fx.New(append([]fx.Option{fx.NopLogger, tenanthttp.Module(cfg), fx.Populate(&srv)}, opts...)...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := app.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return srv
}

// raw writes one request exactly as given (request line included) on a new
// connection and reads the response.
func raw(t *testing.T, addr, request string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var whoRoute = tenanthttp.Route("/who", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	id, _ := tenancy.FromContext(r.Context())
	_, _ = io.WriteString(w, id.String())
}))

// In host mode, an absolute-form request line would put the client's host
// in place of the Host header the proxy set: it is refused, whatever the
// two hosts are, because net/http discards the Host header before any
// handler can compare them.
func TestAbsoluteFormTargetInHostMode(t *testing.T) {
	srv := startApp(t, tenanthttp.Config{TrustedProxy: true, HeaderOff: true, Host: hosts}, whoRoute)
	addr := srv.TenantAddr()
	code, body := raw(t, addr, "GET /who HTTP/1.1\r\nHost: alpha.example.com\r\nConnection: close\r\n\r\n")
	if code != 200 || body != tenantA.String() {
		t.Fatalf("origin form: %d %q", code, body)
	}
	for _, req := range []string{
		"GET http://beta.example.com/who HTTP/1.1\r\nHost: alpha.example.com\r\nConnection: close\r\n\r\n",
		"GET http://alpha.example.com/who HTTP/1.1\r\nHost: alpha.example.com\r\nConnection: close\r\n\r\n",
		"GET http://beta.example.com/who HTTP/1.0\r\n\r\n",
	} {
		code, body := raw(t, addr, req)
		if code != http.StatusBadRequest || !strings.Contains(body, `"code":"tenant_host_ambiguous"`) || strings.Contains(body, tenantB.String()) {
			t.Errorf("%q: %d %q", strings.SplitN(req, "\r\n", 2)[0], code, body)
		}
	}
	// Without host mode the host names no tenant, and the request is served
	// under the header's tenant.
	srv = startApp(t, tenanthttp.Config{TrustedProxy: true}, whoRoute)
	code, body = raw(t, srv.TenantAddr(), "GET http://beta.example.com/who HTTP/1.1\r\nHost: alpha.example.com\r\nX-Tenant-ID: "+
		tenantA.String()+"\r\nConnection: close\r\n\r\n")
	if code != 200 || body != tenantA.String() {
		t.Errorf("absolute form in header mode: %d %q", code, body)
	}
}

// A path whose escaped form decodes into an operator or blocked path is 404
// on the listener that shadows it: ServeMux matches /debug%2Fpprof/ as one
// segment, while a handler reading r.URL.Path sees /debug/pprof/.
func TestEscapedPathsIntoShadowedPaths(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "served "+r.URL.Path) })
	srv := startApp(t, tenanthttp.Config{TrustedProxy: true},
		tenanthttp.Route("/", tenanthttp.Tenant, echo),
		tenanthttp.Route("GET /admin/stats", tenanthttp.Operator, echo),
		tenanthttp.Route("/debug/", tenanthttp.Blocked, nil),
	)
	get := func(addr, target string) (int, string) {
		// localhost: a name the operator listener answers.
		return raw(t, addr, "GET "+target+" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	}
	for _, p := range []string{
		"/debug%2Fpprof/", "/debug%2fpprof/profile", "/debug%2F", "/admin%2fstats", "/admin%2Fstats",
		"/%64ebug/pprof/", "/x%2F..%2Fdebug%2Fpprof/", "/tenancy%2Fmatrix",
	} {
		if code, body := get(srv.TenantAddr(), p); code != http.StatusNotFound || strings.Contains(body, "served") {
			t.Errorf("tenant listener %s: %d %q", p, code, body)
		}
	}
	// Escapes elsewhere are untouched.
	if code, body := get(srv.TenantAddr(), "/files/a%2Fb"); code != 200 || body != "served /files/a/b" {
		t.Errorf("tenant listener /files/a%%2Fb: %d %q", code, body)
	}
	if code, body := get(srv.OperatorAddr(), "/admin%2Fstats"); code != http.StatusNotFound {
		t.Errorf("operator listener /admin%%2Fstats (a different path to ServeMux): %d %q", code, body)
	}

	// The operator listener shadows blocked paths the same way.
	srv = startApp(t, tenanthttp.Config{TrustedProxy: true},
		tenanthttp.Route("/", tenanthttp.Operator, echo),
		tenanthttp.Route("/debug/", tenanthttp.Blocked, nil),
	)
	if code, body := get(srv.OperatorAddr(), "/debug%2Fpprof/"); code != http.StatusNotFound || strings.Contains(body, "served") {
		t.Errorf("operator listener /debug%%2Fpprof/: %d %q", code, body)
	}
	if code, body := get(srv.OperatorAddr(), "/status%2Fx"); code != 200 || body != "served /status/x" {
		t.Errorf("operator listener /status%%2Fx: %d %q", code, body)
	}
}

// An idle keep-alive connection is closed once the idle timeout passes.
func TestIdleConnectionClosed(t *testing.T) {
	srv := startApp(t, tenanthttp.Config{TrustedProxy: true, IdleTimeout: 200 * time.Millisecond}, whoRoute)
	conn, err := net.Dial("tcp", srv.TenantAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /who HTTP/1.1\r\nHost: svc\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("first request: %d, close %v", resp.StatusCode, resp.Close)
	}
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(5 * time.Second))
	_, err = br.ReadByte()
	idle := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the idle connection was still open after %v", idle)
	}
	if err == nil || idle < 150*time.Millisecond || idle > 3*time.Second {
		t.Fatalf("idle connection: %v after %v, want it closed after about 200ms", err, idle)
	}
}

// A body trickling in is cut off when the read timeout passes: the handler
// sees an error, not the whole body.
func TestTricklingBodyCutOff(t *testing.T) {
	type result struct {
		n   int
		err error
		at  time.Duration
	}
	got := make(chan result, 1)
	srv := startApp(t, tenanthttp.Config{TrustedProxy: true, ReadTimeout: 300 * time.Millisecond},
		tenanthttp.Route("POST /upload", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			b, err := io.ReadAll(r.Body)
			got <- result{len(b), err, time.Since(start)}
		})))
	conn, err := net.Dial("tcp", srv.TenantAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const size = 20
	if _, err := io.WriteString(conn, "POST /upload HTTP/1.1\r\nHost: svc\r\nContent-Length: 20\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for range size {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := conn.Write([]byte("x")); err != nil {
				return
			}
		}
	}()
	select {
	case r := <-got:
		if r.err == nil || r.n >= size {
			t.Fatalf("the handler read %d bytes (error %v) of a body trickling one byte per 100ms", r.n, r.err)
		}
		if r.at > 1500*time.Millisecond {
			t.Errorf("the trickle was cut after %v, want about 300ms", r.at)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never returned")
	}
}

// Headers past the default limit (64 KiB) are refused with 431 without any
// configuration.
func TestOversizedHeadersRefused(t *testing.T) {
	srv := startApp(t, tenanthttp.Config{TrustedProxy: true}, whoRoute)
	pad := strings.Repeat("a", 100<<10)
	code, _ := raw(t, srv.TenantAddr(), "GET /who HTTP/1.1\r\nHost: svc\r\nX-Pad: "+pad+"\r\nConnection: close\r\n\r\n")
	if code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("100 KiB of headers: %d", code)
	}
	if code, _ := raw(t, srv.TenantAddr(), "GET /who HTTP/1.1\r\nHost: svc\r\nX-Pad: "+pad[:8<<10]+"\r\nConnection: close\r\n\r\n"); code != 200 {
		t.Errorf("8 KiB of headers: %d", code)
	}
}
