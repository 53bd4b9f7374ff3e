package tenantotel_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
	"github.com/tenantwire/tenantwire/tenantotel"
)

// Module wires the SDK: every route call is a span (here recorded in
// memory; a service gives an OTLP exporter's batch processor) and a
// series on the operator listener's GET /metrics.
func ExampleModule() {
	rec := tracetest.NewSpanRecorder()
	var (
		srv   *tenanthttp.Server
		cache *memory.Cache
	)
	app := fx.New(fx.NopLogger,
		tenantotel.Module(tenantotel.Config{
			Telemetry:      telemetry.Config{SpanTenant: telemetry.TenantRaw},
			SpanProcessors: []sdktrace.SpanProcessor{rec},
		}),
		memory.Module("sessions", memory.CacheRoute("session", memory.CacheConfig{TenantAware: true, Keys: naming.Shared("sessions")})),
		tenanthttp.Module(tenanthttp.Config{TrustedProxy: true, TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0"}),
		fx.Populate(&srv, &cache),
	)
	if err := app.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = app.Stop(context.Background()) }()

	ctx := tenancy.WithTenant(context.Background(), tenancy.MustParseID("7c9e6679-7425-40de-944b-e07fc1f90ae7"))
	_, _, _ = cache.Get(ctx, "k")
	for _, s := range rec.Ended() {
		fmt.Println("span:", s.Name())
		for _, kv := range s.Attributes() {
			fmt.Printf("  %s=%s\n", kv.Key, kv.Value.String())
		}
	}
	resp, err := http.Get("http://" + srv.OperatorAddr() + tenantotel.MetricsPath)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for l := range strings.Lines(string(body)) {
		if strings.HasPrefix(l, "tenantwire_route_duration_seconds_count") {
			fmt.Println("metric: calls", strings.Fields(l)[1])
		}
	}
	// Output:
	// span: memory session
	//   tenantwire.backend=memory
	//   tenantwire.module=sessions
	//   tenantwire.route=session
	//   tenantwire.route.kind=cache
	//   tenantwire.tier=tagged
	//   tenantwire.tenant=7c9e6679-7425-40de-944b-e07fc1f90ae7
	// metric: calls 1
}
