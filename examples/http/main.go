// Command http boots the tenantwire HTTP boundary on loopback, with a
// notes route over the embedded memory backend, then calls itself as two
// tenants: each sees only its own notes, a malformed tenant header gets the
// 400, and operator surfaces exist only on the operator listener. It exits
// when done.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// Note is what the route stores.
type Note struct {
	Text string `json:"text"`
}

const (
	acme   = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	globex = "3F2504E0-4F89-41D3-9A0C-0305E82C3301" // upper case: the header is case-insensitive
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "http example:", err)
		os.Exit(1)
	}
}

// notes is the tenant route's handler. It never reads a tenant: the
// adapter takes it from the context the boundary bound.
func notes(d *memory.Documents[Note]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		switch r.Method {
		case http.MethodPut:
			var n Note
			if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
				http.Error(w, "bad body", http.StatusBadRequest)
				return
			}
			if _, err := d.Create(r.Context(), id, n); errors.Is(err, document.ErrExists) {
				http.Error(w, "exists", http.StatusConflict)
				return
			} else if err != nil {
				// A coded refusal (tenant_suspended, ...) names its code and
				// nothing of the service; the rest is a 500 "internal".
				tenanthttp.WriteError(w, r, err)
				return
			}
			w.WriteHeader(http.StatusCreated)
		default:
			rec, err := d.Get(r.Context(), id)
			if errors.Is(err, document.ErrNotFound) {
				http.NotFound(w, r)
				return
			}
			if err != nil {
				tenanthttp.WriteError(w, r, err)
				return
			}
			_ = json.NewEncoder(w).Encode(rec.Value)
		}
	})
}

func run(out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	app, srv, err := start(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = app.Stop(ctx) }()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for _, s := range tour("http://"+srv.TenantAddr(), "http://"+srv.OperatorAddr()) {
		if err := call(ctx, c, out, s); err != nil {
			return err
		}
	}
	return nil
}

// start wires the notes route on the tenant listener, a metrics page on the
// operator listener only and /debug/ blocked, and starts the listeners.
func start(ctx context.Context) (*fx.App, *tenanthttp.Server, error) {
	var srv *tenanthttp.Server
	app := fx.New(
		fx.NopLogger,
		fx.Supply(slog.New(slog.NewTextHandler(io.Discard, nil))),
		memory.Module("notes",
			modules.RequiredIsolation(tenancy.Namespace),
			memory.Document[Note]("notes", memory.DocumentConfig{Read: naming.PerTenant("notes")})),
		tenanthttp.Module(tenanthttp.Config{
			TenantAddr:   "127.0.0.1:0",
			OperatorAddr: "127.0.0.1:0",
			// This program is its own proxy: it sets the header itself.
			TrustedProxy: true,
		}),
		tenanthttp.RouteWith("PUT /notes/{id}", tenanthttp.Tenant, notes),
		tenanthttp.RouteWith("GET /notes/{id}", tenanthttp.Tenant, notes),
		tenanthttp.Route("GET /metrics", tenanthttp.Operator, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "# metrics would be served here\n")
		})),
		tenanthttp.Route("/debug/", tenanthttp.Blocked, nil),
		fx.Populate(&srv),
	)
	if err := app.Err(); err != nil {
		return nil, nil, err
	}
	if err := app.Start(ctx); err != nil {
		return nil, nil, err
	}
	return app, srv, nil
}

// step is one request of the tour: who sends what where ("" for no tenant
// header), and its label in the output.
type step struct{ label, method, url, tenant, body string }

// tour is every request the program makes, to the tenant listener at ten
// and the operator listener at op.
func tour(ten, op string) []step {
	return []step{
		{"acme writes note n1", "PUT", ten + "/notes/n1", acme, `{"text":"acme's plan"}`},
		{"globex writes note n1", "PUT", ten + "/notes/n1", globex, `{"text":"globex's plan"}`},
		{"acme reads n1", "GET", ten + "/notes/n1", acme, ""},
		{"globex reads n1", "GET", ten + "/notes/n1", globex, ""},
		{"acme writes note n2", "PUT", ten + "/notes/n2", acme, `{"text":"acme only"}`},
		{"globex reads n2", "GET", ten + "/notes/n2", globex, ""},
		{"no header (default tenant) reads n2", "GET", ten + "/notes/n2", "", ""},
		{"malformed header reads n1", "GET", ten + "/notes/n1", "acme", ""},
		{"tenant listener: /tenancy/matrix", "GET", ten + "/tenancy/matrix", acme, ""},
		{"tenant listener: /metrics", "GET", ten + "/metrics", acme, ""},
		{"tenant listener: blocked /debug/vars", "GET", ten + "/debug/vars", acme, ""},
		{"operator listener: /healthz", "GET", op + "/healthz", "", ""},
		{"operator listener: /metrics", "GET", op + "/metrics", "", ""},
	}
}

// call sends s and prints its label, status and body.
func call(ctx context.Context, c *http.Client, out io.Writer, s step) error {
	req, err := http.NewRequestWithContext(ctx, s.method, s.url, strings.NewReader(s.body))
	if err != nil {
		return err
	}
	if s.tenant != "" {
		req.Header.Set(tenanthttp.DefaultHeader, s.tenant)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("%-38s -> %d %s", s.label, resp.StatusCode, strings.TrimSpace(string(b)))
	fmt.Fprintln(out, strings.TrimSpace(line))
	return nil
}
