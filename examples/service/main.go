// Command service is a small tenant-aware service on real backends: orders
// in PostgreSQL with a schema per tenant (namespace), page views counted in
// Redis under a tenant key prefix (tagged), served through the HTTP
// boundary, observed: a span per request and per route call (the tenant
// hashed), Prometheus metrics and readiness on the operator listener, log
// lines naming their tenant. It provisions two tenants, calls itself as
// each, prints what each sees, what the operator listener reports and the
// spans of one request, tears its schemas down and exits. It needs
// PostgreSQL and Redis (`make services`); TENANTWIRE_PG_URL and
// TENANTWIRE_REDIS_ADDR override where they are.
//
// It is a module of its own, as an app is: it wires the OpenTelemetry SDK
// (tenantotel), which the library does not depend on. Run it from here:
// `go run .`; `go run . migrate [-dry-run] [-concurrency N] [-prefix P]`
// migrates every tenant of the orders module listed in its registry
// (migrate.go).
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
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
	"github.com/tenantwire/tenantwire/tenantotel"
)

// Order is what the orders route stores.
type Order struct {
	Item string `json:"item"`
	Qty  int    `json:"qty"`
}

var (
	acme   = tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7")
	globex = tenancy.MustParseID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
)

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "migrate" {
		if err := runMigrate(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "service migrate:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "service:", err)
		os.Exit(1)
	}
}

// handlers holds the routes the HTTP handlers use; none of them takes a
// tenant: the adapters read the one the boundary bound.
type handlers struct {
	fx.In
	Orders *postgres.Documents[Order]
	Views  *redis.Counter `name:"views"`
	Log    *slog.Logger
}

func ordersHandler(h handlers) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if r.Method == http.MethodPut {
			var o Order
			if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
				http.Error(w, "bad body", http.StatusBadRequest)
				return
			}
			if _, err := h.Orders.Create(r.Context(), id, o); errors.Is(err, document.ErrExists) {
				http.Error(w, "exists", http.StatusConflict)
				return
			} else if err != nil {
				// A coded refusal (tenant_suspended, ...) names its code and
				// nothing of the service; the rest is a 500 "internal".
				tenanthttp.WriteError(w, r, err)
				return
			}
			// The logger's handler adds the tenant the boundary bound.
			h.Log.InfoContext(r.Context(), "order created", "order", id)
			w.WriteHeader(http.StatusCreated)
			return
		}
		views, err := h.Views.Add(r.Context(), "orders/"+id, 1)
		if err != nil {
			tenanthttp.WriteError(w, r, err)
			return
		}
		rec, err := h.Orders.Get(r.Context(), id)
		if errors.Is(err, document.ErrNotFound) {
			http.Error(w, fmt.Sprintf("not found (view %d)", views), http.StatusNotFound)
			return
		}
		if err != nil {
			tenanthttp.WriteError(w, r, err)
			return
		}
		fmt.Fprintf(w, "%s x%d (view %d)", rec.Value.Item, rec.Value.Qty, views)
	})
}

// spanKey keys the tenant's hash on spans: a trace backend sees which calls
// belong together, never whose they are. A real service reads it from its
// secrets.
var spanKey = []byte("example-span-key-change-me")

// observed is the service's telemetry: the SDK recording spans into rec
// (a real service gives an OTLP exporter's batch processor instead), the
// Prometheus exporter behind GET /metrics on the operator listener.
func observed(rec sdktrace.SpanProcessor) fx.Option {
	return tenantotel.Module(tenantotel.Config{
		Telemetry:      telemetry.Config{SpanTenant: telemetry.TenantHash(spanKey)},
		SpanProcessors: []sdktrace.SpanProcessor{rec},
	})
}

// wiring is the service's modules and routes: what its tests dry-run to
// pin its tenancy matrix (main_test.go, testdata/tenancy.golden).
func wiring(pgURL, redisAddr, prefix string, reg migrate.Registry) fx.Option {
	return fx.Options(
		ordersModule(pgURL, prefix, reg),
		redis.Module("cache",
			redis.Connect(&goredis.UniversalOptions{Addrs: []string{redisAddr}}),
			modules.RequiredIsolation(tenancy.Tagged),
			redis.CounterRoute("views", redis.RouteConfig{TenantAware: true}),
		),
		tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true}),
		tenanthttp.RouteWith("PUT /orders/{id}", tenanthttp.Tenant, ordersHandler),
		tenanthttp.RouteWith("GET /orders/{id}", tenanthttp.Tenant, ordersHandler),
	)
}

func run(out io.Writer) error {
	pgURL := env("TENANTWIRE_PG_URL", "postgres://postgres@127.0.0.1:5432/tenantwire_test?sslmode=disable")
	redisAddr := env("TENANTWIRE_REDIS_ADDR", "127.0.0.1:6379")
	// A prefix of its own per run, so runs never see each other's schemas.
	prefix := fmt.Sprintf("svc%d", time.Now().UnixNano()%1_000_000_000)

	regPool, err := pgxpool.New(context.Background(), pgURL)
	if err != nil {
		return err
	}
	defer regPool.Close()
	reg, err := registry(regPool, prefix)
	if err != nil {
		return err
	}
	defer func() { _, _ = regPool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+prefix+"reg CASCADE") }()

	rec := tracetest.NewSpanRecorder()
	var logs strings.Builder
	svc, err := build(wiring(pgURL, redisAddr, prefix, reg), rec, &logs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := svc.app.Start(ctx); err != nil {
		return err
	}
	tr := &http.Transport{}
	defer func() {
		tr.CloseIdleConnections()
		_ = svc.app.Stop(context.Background())
	}()

	fmt.Fprintln(out, "Live tenancy matrix:")
	if err := svc.live.Matrix().WriteText(out); err != nil {
		return err
	}
	teardown, err := svc.provision(ctx, acme, globex)
	defer teardown()
	if err != nil {
		return err
	}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	fmt.Fprintln(out)
	if err := visit(ctx, out, c, "http://"+svc.srv.TenantAddr()); err != nil {
		return err
	}
	return report(ctx, out, c, svc.srv, rec, logs.String())
}

// service is the built app and the parts of it the run reads.
type service struct {
	app   *fx.App
	srv   *tenanthttp.Server
	pg    *postgres.Client
	views *redis.Counter
	live  modules.Live
}

// build builds the service, observed: spans into rec, log lines into logs.
func build(routes fx.Option, rec sdktrace.SpanProcessor, logs io.Writer) (*service, error) {
	var s service
	s.app = fx.New(
		fx.NopLogger,
		fx.Supply(logger(logs)),
		observed(rec),
		routes,
		fx.Populate(&s.srv, &s.live),
		fx.Invoke(fx.Annotate(func(c *postgres.Client, v *redis.Counter) { s.pg, s.views = c, v },
			fx.ParamTags(`name:"orders"`, `name:"views"`))),
	)
	return &s, s.app.Err()
}

// logger writes text lines to w; every line logged with a request's
// context names its tenant.
func logger(w io.Writer) *slog.Logger {
	return slog.New(modules.TenantHandler(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // stable output
			}
			return a
		},
	})))
}

// provision creates each tenant's schema. The teardown it returns, also
// after an error, removes the schemas it created and the tenants' page
// views, last tenant first.
func (s *service) provision(ctx context.Context, ids ...tenancy.ID) (teardown func(), err error) {
	var done []tenancy.ID
	teardown = func() {
		for _, id := range slices.Backward(done) {
			_ = s.pg.Teardown(context.Background(), id)
			_, _ = s.views.Delete(tenancy.WithTenant(context.Background(), id), "orders/o-1")
		}
	}
	for _, id := range ids {
		if err := s.pg.Provision(ctx, id); err != nil {
			return teardown, fmt.Errorf("provision %s: %w", id, err)
		}
		done = append(done, id)
	}
	return teardown, nil
}

// visit calls the tenant listener at base as each tenant in turn and
// prints what each one gets.
func visit(ctx context.Context, out io.Writer, c *http.Client, base string) error {
	for _, s := range []struct {
		label, method, path string
		tenant              tenancy.ID
		body                string
	}{
		{"acme creates order o-1", "PUT", "/orders/o-1", acme, `{"item":"anvil","qty":3}`},
		{"acme reads o-1", "GET", "/orders/o-1", acme, ""},
		{"globex reads o-1", "GET", "/orders/o-1", globex, ""},
		{"globex creates its own o-1", "PUT", "/orders/o-1", globex, `{"item":"rocket","qty":1}`},
		{"globex reads o-1", "GET", "/orders/o-1", globex, ""},
		{"acme reads o-1 again", "GET", "/orders/o-1", acme, ""},
	} {
		req, err := http.NewRequestWithContext(ctx, s.method, base+s.path, strings.NewReader(s.body))
		if err != nil {
			return err
		}
		req.Header.Set(tenanthttp.DefaultHeader, s.tenant.String())
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-28s -> %d %s\n", s.label, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}
