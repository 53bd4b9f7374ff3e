package tenantotel_test

import (
	"context"
	"errors"
	"testing"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	goredis "github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantotel"
)

// TestEveryBackendsCallIsASpan: a bound call and an unbound one on a
// tagged Redis and a tagged Neo4j route (real servers) are each a span
// with the route's attributes; the unbound one carries tenant_unbound.
// (PostgreSQL and Kafka: TestOneRequestIsOneStoryAcrossTheOutbox; the
// memory backend: TestRouteCallIsASpanAndASeries.)
func TestEveryBackendsCallIsASpan(t *testing.T) {
	addr := testsvc.RedisAddr(t)
	n4 := testsvc.Neo4j(t)
	var auth = drv.NoAuth()
	if n4.User != "" {
		auth = drv.BasicAuth(n4.User, n4.Password, "")
	}
	rec := tracetest.NewSpanRecorder()
	var d struct {
		fx.In
		Cache *redis.Cache `name:"sessions"`
		Graph *neo4j.Graph `name:"people"`
	}
	app := fx.New(fx.NopLogger,
		tenantotel.Module(tenantotel.Config{Telemetry: telemetry.Config{SpanTenant: telemetry.TenantRaw},
			SpanProcessors: []sdktrace.SpanProcessor{rec}, NoMetricsRoute: true}),
		redis.Module("kv", redis.Connect(&goredis.UniversalOptions{Addrs: []string{addr}}),
			redis.CacheRoute("sessions", redis.RouteConfig{TenantAware: true})),
		neo4j.Module("graph", neo4j.Connect(n4.URI, auth),
			neo4j.GraphRoute("people", neo4j.RouteConfig{TenantAware: true})),
		fx.Populate(&d),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	bound, unbound := tenancy.WithTenant(context.Background(), tenantA), context.Background()

	calls := map[string]func(context.Context) error{
		"redis sessions": func(ctx context.Context) error { _, _, err := d.Cache.Get(ctx, "k"); return err },
		"neo4j people": func(ctx context.Context) error {
			_, err := d.Graph.CountNodes(ctx, []string{"Person"}, nil)
			return err
		},
	}
	for name, call := range calls {
		if err := call(bound); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := call(unbound); !errors.Is(err, tenancy.CodeTenantUnbound) {
			t.Fatalf("%s unbound: %v", name, err)
		}
	}
	for name := range calls {
		var ok, refused sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() != name {
				continue
			}
			if attrs(s)[telemetry.AttrErrorCode] == "" {
				ok = s
			} else {
				refused = s
			}
		}
		if ok == nil || refused == nil {
			t.Errorf("%s: spans %s", name, names(rec.Ended()))
			continue
		}
		a := attrs(ok)
		if a[telemetry.AttrTier] != "tagged" || a[telemetry.AttrTenant] != tenantA.String() || a[telemetry.AttrRoute] == "" || a[telemetry.AttrModule] == "" {
			t.Errorf("%s: attributes %v", name, a)
		}
		if got := attrs(refused)[telemetry.AttrErrorCode]; got != string(tenancy.CodeTenantUnbound) {
			t.Errorf("%s refused: code %q", name, got)
		}
	}
}
