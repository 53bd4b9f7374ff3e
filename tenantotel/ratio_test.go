package tenantotel_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	goredis "github.com/redis/go-redis/v9"
	kafkago "github.com/segmentio/kafka-go"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/fx"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/memory"
	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantotel"
)

// discard is the no-op exporter: the SDK does all its work (spans built,
// batched, handed over) and the spans go nowhere.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// sdkOn is the telemetry a P11 "on" side records with: the SDK's tracer
// with tenantotel's Batcher in front of the no-op exporter (with the
// SDK's own BatchSpanProcessor when sdkBatcher), the SDK's meter with a
// reader (the Prometheus exporter's kind: it aggregates every measurement
// and is read only when scraped), the tenant on spans.
func sdkOn(t *testing.T, sampler sdktrace.Sampler, sdkBatcher bool) fx.Option {
	var proc sdktrace.SpanProcessor = tenantotel.NewBatcher(discard{}, tenantotel.BatcherConfig{})
	if sdkBatcher {
		proc = sdktrace.NewBatchSpanProcessor(discard{})
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(proc), sdktrace.WithSampler(sampler))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	return telemetry.Provide(telemetry.Config{TracerProvider: tp, MeterProvider: mp, SpanTenant: telemetry.TenantRaw})
}

// pairApps starts two apps built by build, one with the SDK recording
// every call and one with no provider, and populates on and off from them.
func pairApps(t *testing.T, build func(on bool) []fx.Option) {
	t.Helper()
	sampledApps(t, sdktrace.AlwaysSample(), false, build)
}

// sampledApps is pairApps with the "on" app's sampler and span processor.
func sampledApps(t *testing.T, sampler sdktrace.Sampler, sdkBatcher bool, build func(on bool) []fx.Option) {
	t.Helper()
	for _, on := range []bool{true, false} {
		opts := append([]fx.Option{fx.NopLogger}, build(on)...)
		if on {
			opts = append(opts, sdkOn(t, sampler, sdkBatcher))
		}
		app := fx.New(opts...)
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = app.Stop(context.Background()) })
	}
}

func loop(t *testing.T, call func() error) func(int) {
	return func(n int) {
		for range n {
			if err := call(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRatioP11On: P11, a route call with tracing and metrics on (the SDK,
// a no-op exporter) against the same call in an app with no provider, per
// backend; target 1.10.
func TestRatioP11On(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	ctx := tenancy.WithTenant(context.Background(), tenantA)
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])

	t.Run("memory", func(t *testing.T) {
		var on, off *memory.Cache
		pairApps(t, func(isOn bool) []fx.Option {
			dst := &off
			if isOn {
				dst = &on
			}
			return []fx.Option{memory.Module("m", memory.CacheRoute("session", memory.CacheConfig{TenantAware: true, Keys: naming.Shared("s")})), fx.Populate(dst)}
		})
		for _, c := range []*memory.Cache{on, off} {
			if err := c.Set(ctx, "k", []byte("v"), time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		get := func(c *memory.Cache) func(int) {
			return loop(t, func() error { _, _, err := c.Get(ctx, "k"); return err })
		}
		ratio.Report(t, ratio.Pair{Label: "P11", Name: "memory-otel-on", Ours: get(on), Baseline: get(off), Rounds: 31, Iterations: 20000}, 1.10)
	})

	t.Run("redis", func(t *testing.T) {
		addr := testsvc.RedisAddr(t)
		var on, off *redis.Cache
		pairApps(t, func(isOn bool) []fx.Option {
			dst := &off
			if isOn {
				dst = &on
			}
			return []fx.Option{redis.Module("kv", redis.Connect(&goredis.UniversalOptions{Addrs: []string{addr}}),
				redis.CacheRoute("p11-"+suffix, redis.RouteConfig{TenantAware: true})), named("p11-"+suffix, dst)}
		})
		if err := off.Set(ctx, "k", []byte("v"), time.Minute); err != nil {
			t.Fatal(err)
		}
		get := func(c *redis.Cache) func(int) {
			return loop(t, func() error { _, _, err := c.Get(ctx, "k"); return err })
		}
		ratio.Report(t, ratio.Pair{Label: "P11", Name: "redis-otel-on", Ours: get(on), Baseline: get(off), Rounds: 31, Iterations: 500}, 1.10)
	})

	// Sampling 1% of traces (metrics still count every call): the usual
	// production setting, and what a span per call costs then.
	t.Run("redis-sampled", func(t *testing.T) {
		addr := testsvc.RedisAddr(t)
		var on, off *redis.Cache
		sampledApps(t, sdktrace.TraceIDRatioBased(0.01), false, func(isOn bool) []fx.Option {
			dst := &off
			if isOn {
				dst = &on
			}
			return []fx.Option{redis.Module("kv", redis.Connect(&goredis.UniversalOptions{Addrs: []string{addr}}),
				redis.CacheRoute("p11s-"+suffix, redis.RouteConfig{TenantAware: true})), named("p11s-"+suffix, dst)}
		})
		if err := off.Set(ctx, "k", []byte("v"), time.Minute); err != nil {
			t.Fatal(err)
		}
		get := func(c *redis.Cache) func(int) {
			return loop(t, func() error { _, _, err := c.Get(ctx, "k"); return err })
		}
		ratio.Report(t, ratio.Pair{Label: "P11", Name: "redis-otel-sampled-1pct", Ours: get(on), Baseline: get(off), Rounds: 31, Iterations: 500}, 1.10)
	})

	t.Run("postgres", func(t *testing.T) {
		dsn := testsvc.PostgresURL(t)
		table := "p11_counter_" + suffix
		t.Cleanup(func() {
			if conn, err := pgx.Connect(context.Background(), dsn); err == nil {
				_, _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+table)
				_ = conn.Close(context.Background())
			}
		})
		// The second pair puts the SDK's own BatchSpanProcessor in front of
		// the exporter: it wakes its goroutine for every span.
		for _, v := range []struct {
			name       string
			sdkBatcher bool
		}{{"pg-otel-on", false}, {"pg-otel-on-sdk-batcher", true}} {
			var on, off *postgres.Counter
			var client *postgres.Client
			sampledApps(t, sdktrace.AlwaysSample(), v.sdkBatcher, func(isOn bool) []fx.Option {
				dst := &off
				if isOn {
					dst = &on
				}
				return []fx.Option{postgres.Module("pg", postgres.Connect(dsn),
					postgres.CounterRoute("hits", postgres.CounterConfig{TenantAware: true, Table: naming.Shared(table)})),
					named("hits", dst), named("pg", &client)}
			})
			if err := client.Provision(ctx, tenantA); err != nil {
				t.Fatal(err)
			}
			get := func(c *postgres.Counter) func(int) {
				return loop(t, func() error { _, err := c.Get(ctx, "k"); return err })
			}
			ratio.Report(t, ratio.Pair{Label: "P11", Name: v.name, Ours: get(on), Baseline: get(off), Rounds: 31, Iterations: 300}, 1.10)
		}
	})

	t.Run("neo4j", func(t *testing.T) {
		n4 := testsvc.Neo4j(t)
		auth := drv.NoAuth()
		if n4.User != "" {
			auth = drv.BasicAuth(n4.User, n4.Password, "")
		}
		var on, off *neo4j.Graph
		pairApps(t, func(isOn bool) []fx.Option {
			dst := &off
			if isOn {
				dst = &on
			}
			return []fx.Option{neo4j.Module("graph", neo4j.Connect(n4.URI, auth),
				neo4j.GraphRoute("people", neo4j.RouteConfig{TenantAware: true})), named("people", dst)}
		})
		count := func(g *neo4j.Graph) func(int) {
			return loop(t, func() error { _, err := g.CountNodes(ctx, []string{"P11x" + suffix}, nil); return err })
		}
		ratio.Report(t, ratio.Pair{Label: "P11", Name: "neo4j-otel-on", Ours: count(on), Baseline: count(off), Rounds: 31, Iterations: 20}, 1.10)
	})

	t.Run("kafka", func(t *testing.T) {
		broker := testsvc.KafkaBrokers(t)
		topic := "tw-p11-" + suffix
		admin := &kafkago.Client{Addr: kafkago.TCP(broker), Timeout: 10 * time.Second}
		if _, err := admin.CreateTopics(context.Background(), &kafkago.CreateTopicsRequest{
			Topics: []kafkago.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = admin.DeleteTopics(context.Background(), &kafkago.DeleteTopicsRequest{Topics: []string{topic}})
		})
		var on, off *kafka.Producer
		pairApps(t, func(isOn bool) []fx.Option {
			dst := &off
			if isOn {
				dst = &on
			}
			return []fx.Option{kafka.Module("bus", kafka.Brokers(broker),
				kafka.ProducerRoute("events", kafka.ProducerConfig{Topic: naming.Shared(topic)})), named("events", dst)}
		})
		produce := func(p *kafka.Producer) func(int) {
			return loop(t, func() error { return p.Produce(ctx, kafka.Message{Key: []byte("k"), Value: []byte("v")}) })
		}
		ratio.Report(t, ratio.Pair{Label: "P11", Name: "kafka-otel-on", Ours: produce(on), Baseline: produce(off), Rounds: 31, Iterations: 5}, 1.10)
	})
}

// named populates dst with the value provided under name:"<name>".
func named[T any](name string, dst *T) fx.Option {
	return fx.Invoke(fx.Annotate(func(v T) { *dst = v }, fx.ParamTags(`name:"`+name+`"`)))
}
