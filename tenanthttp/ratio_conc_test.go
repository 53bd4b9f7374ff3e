package tenanthttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// TestRatioConcHTTP: C<tenants>-http-boundary-get, G goroutines (64, and
// 8 as "-g8") sending GET requests over loopback keep-alive connections,
// each naming tenant (offset + i) mod tenants in X-Tenant-ID, to the
// module's tenant listener (the resolver in front of a trivial handler
// that writes the tenant it finds in the context) vs a plain http.Server
// with the same limits whose handler reads and parses the header by hand
// and writes the same. Both sides use one client code path, a transport of
// their own with G idle connections, and check the status and the body.
func TestRatioConcHTTP(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	write := func(w http.ResponseWriter, id tenancy.ID) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, id.Hex())
	}
	var srv *tenanthttp.Server
	app := fx.New(fx.NopLogger,
		tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true}),
		tenanthttp.Route("GET /t", tenanthttp.Tenant, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, _ := tenancy.FromContext(r.Context())
			write(w, id)
		})),
		fx.Populate(&srv))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })

	mux := http.NewServeMux()
	mux.HandleFunc("GET /t", func(w http.ResponseWriter, r *http.Request) {
		id, err := tenancy.ParseID(r.Header.Get("X-Tenant-ID"))
		if err != nil {
			http.Error(w, "invalid tenant header", http.StatusBadRequest)
			return
		}
		write(w, id)
	})
	// The module's default listener limits (tenanthttp.Config), so that
	// both servers set the same deadlines per request.
	plain := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = plain.Serve(l) }()
	t.Cleanup(func() { _ = plain.Close() })

	for _, tenants := range []int{1, 10000} {
		ids, hexes := make([]string, tenants), make([]string, tenants)
		for i := range ids {
			id := tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i+1))
			ids[i], hexes[i] = id.String(), id.Hex()
		}
		for _, g := range []int{64, 8} {
			name := "http-boundary-get"
			if g != 64 {
				name += "-g" + strconv.Itoa(g)
			}
			t.Run(strconv.Itoa(tenants)+"/g"+strconv.Itoa(g), func(t *testing.T) {
				ours := httpSide(t, g, "http://"+srv.TenantAddr()+"/t", ids, hexes)
				hand := httpSide(t, g, "http://"+l.Addr().String()+"/t", ids, hexes)
				for i := range tenants { // warm: every tenant, and G connections each
					if err := errors.Join(ours(i), hand(i)); err != nil {
						t.Fatal(err)
					}
				}
				ratio.ReportParallel(t, ratio.Pair{Label: "C" + strconv.Itoa(tenants), Name: name, Iterations: 3000, Rounds: 11, Cap: 30 * time.Second,
					Ours: ratio.ParallelSide(t, g, tenants, ours), Baseline: ratio.ParallelSide(t, g, tenants, hand)}, 1.05, 15000)
			})
		}
	}
}

// httpSide is one side's call: a GET of url naming tenant i, on a client
// of its own keeping up to g connections, the answer checked.
func httpSide(t *testing.T, g int, url string, ids, hexes []string) func(i int) error {
	tr := &http.Transport{MaxIdleConnsPerHost: g, MaxIdleConns: g}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	return func(i int) error {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-Tenant-ID", ids[i])
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || string(body) != hexes[i] {
			return fmt.Errorf("tenant %s: %d %q", ids[i], resp.StatusCode, body)
		}
		return nil
	}
}
