package kafka_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/fx"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Nothing listens here: wiring checks and construction never dial.
const nowhere = "127.0.0.1:1"

func handle(context.Context, kafkago.Message) error { return nil }

func assigned(context.Context) ([]tenancy.ID, error) {
	return []tenancy.ID{tenancytest.TenantA}, nil
}

func resolve(context.Context, tenancy.ID) (routing.Credentials, error) {
	return routing.Credentials{Endpoint: nowhere}, nil
}

func TestMatrixRatesEachTier(t *testing.T) {
	var live modules.Live
	tenancytest.RequireWires(t, fx.Options(
		kafka.Module("shared", kafka.Brokers(nowhere),
			kafka.ProducerRoute("audit", kafka.ProducerConfig{Topic: naming.Shared("audit")}),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant("orders.")}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: "g", Handle: handle, WorkerConfig: shards.WorkerConfig{Tenants: assigned}, Topic: naming.PerTenant("orders.")}),
		),
		kafka.Module("own", kafka.Routed(resolve, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4}}), modules.RequiredIsolation(tenancy.Dedicated),
			kafka.ProducerRoute("billing", kafka.ProducerConfig{Topic: naming.Shared("billing")}),
		),
	), fx.Populate(&live))
	got := map[string]tenancy.Tier{}
	for _, r := range live.Matrix().Rows {
		got[r.Route] = r.Reached
	}
	want := map[string]tenancy.Tier{"audit": tenancy.None, "orders": tenancy.Namespace,
		"orders-in": tenancy.Namespace, "billing": tenancy.Dedicated}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("route %s reaches %s, want %s", k, got[k], v)
		}
	}
}

func TestTenantAwareIsRefusedWithAReason(t *testing.T) {
	e := tenancytest.RequireRefused(t, "kafka_tenancy_validation_failed", kafka.Module("events",
		kafka.Brokers(nowhere), kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared("orders"), TenantAware: true})))
	t.Log(e)
	if !strings.Contains(e.Detail, "no tagged tier") || !strings.Contains(e.Fix, "per tenant") {
		t.Fatalf("refusal does not say why: %v", e)
	}
}

func TestFloorRefusesAStaticTopic(t *testing.T) {
	e := tenancytest.RequireRefused(t, "kafka_tenancy_validation_failed", kafka.Module("events",
		kafka.Brokers(nowhere), modules.RequiredIsolation(tenancy.Namespace),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared("orders")})))
	if e.Reached != tenancy.None || e.Required != tenancy.Namespace {
		t.Fatalf("tiers: %v", e)
	}
}

func TestUnboundConsumerOverTenantScopedRouteIsRefused(t *testing.T) {
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, kafka.Module("events",
		kafka.Brokers(nowhere),
		kafka.Consumer("in", kafka.ConsumerConfig{Group: "g", Handle: handle, Topic: naming.PerTenant("orders.")})))
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, kafka.Module("events",
		kafka.Routed(resolve, kafka.RoutedConfig{}),
		kafka.Consumer("in", kafka.ConsumerConfig{Group: "g", Handle: handle, Topic: naming.Shared("orders")})))
	// Headers are no tenant to route a client by.
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, kafka.Module("events",
		kafka.Routed(resolve, kafka.RoutedConfig{}),
		kafka.Consumer("in", kafka.ConsumerConfig{Group: "g", Handle: handle, TenantFromHeaders: true,
			DeadLetter: deadLetter, Topic: naming.Shared("orders")})))
}

func deadLetter(context.Context, kafkago.Message, error) error { return nil }

func TestConsumerBindingsThatWire(t *testing.T) {
	tenancytest.RequireWires(t, kafka.Module("events", kafka.Brokers(nowhere),
		kafka.Consumer("global", kafka.ConsumerConfig{Group: "g", Handle: handle, Topic: naming.Shared("audit")}),
		kafka.Consumer("headers", kafka.ConsumerConfig{Group: "g", Handle: handle, TenantFromHeaders: true,
			DeadLetter: deadLetter, Topic: naming.Shared("orders")}),
		kafka.Consumer("sharded", kafka.ConsumerConfig{Group: "g", Handle: handle, WorkerConfig: shards.WorkerConfig{Tenants: assigned}, Topic: naming.PerTenant("orders.")}),
	))
	tenancytest.RequireWires(t, kafka.Module("own", kafka.Routed(resolve, kafka.RoutedConfig{}),
		kafka.Consumer("sharded", kafka.ConsumerConfig{Group: "g", Handle: handle, WorkerConfig: shards.WorkerConfig{Tenants: assigned}, Topic: naming.Shared("orders")})))
}

func TestInvalidWiring(t *testing.T) {
	cases := map[string]fx.Option{
		"no brokers":          kafka.Module("m", kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: naming.Shared("t")})),
		"no topic":            kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{})),
		"consumer no topic":   kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle})),
		"bad topic":           kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: naming.Shared("a/b")})),
		"dot topic":           kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: naming.Shared("..")})),
		"bad prefix":          kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: naming.PerTenant("a b")})),
		"long prefix":         kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: naming.PerTenant(strings.Repeat("a", 218))})),
		"metric collision":    kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: naming.PerTenant("a.")}), kafka.ProducerRoute("q", kafka.ProducerConfig{Topic: naming.PerTenant("a_")})),
		"duplicate route":     kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: naming.Shared("t")}), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: naming.Shared("u")})),
		"no group":            kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Handle: handle, Topic: naming.Shared("t")})),
		"headers without dlq": kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle, TenantFromHeaders: true, Topic: naming.Shared("t")})),
		"sharded on shared topic": kafka.Module("m", kafka.Brokers(nowhere),
			kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle, WorkerConfig: shards.WorkerConfig{Tenants: assigned}, Topic: naming.Shared("t")})),
		"sharded and headers": kafka.Module("m", kafka.Brokers(nowhere),
			kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle, WorkerConfig: shards.WorkerConfig{Tenants: assigned}, TenantFromHeaders: true, DeadLetter: deadLetter, Topic: naming.PerTenant("t.")})),
	}
	for name, opt := range cases {
		t.Run(name, func(t *testing.T) { tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, opt) })
	}
}

// A static topic named as tenant B's topic under a prefix route beside it
// would be B's too: B's producer would write into the shared topic and
// B's topic migrations rewrite its configuration. The shape is refused
// whatever the prefix (another module's included), on producers and
// consumers, and so is an unsharded consumer group named as one of a
// sharded consumer's per-tenant groups.
func TestStaticTopicInTenantSpace(t *testing.T) {
	b := "orders." + tenancytest.TenantB.Hex()
	for name, c := range map[string]struct {
		opts  []kafka.Option
		route string
	}{
		"beside its prefix": {[]kafka.Option{kafka.ProducerRoute("shared", kafka.ProducerConfig{Topic: naming.Shared(b)}),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant("orders.")})}, "shared"},
		"any prefix": {[]kafka.Option{kafka.ProducerRoute("shared", kafka.ProducerConfig{Topic: naming.Shared("x" + tenancytest.TenantB.Hex())})}, "shared"},
		"consumer":   {[]kafka.Option{kafka.Consumer("in", kafka.ConsumerConfig{Group: "g", Handle: handle, Topic: naming.Shared(b)})}, "in"},
		"group": {[]kafka.Option{kafka.Consumer("in", kafka.ConsumerConfig{Group: "g." + tenancytest.TenantB.Hex(), Handle: handle, Topic: naming.Shared("orders")}),
			kafka.Consumer("per", kafka.ConsumerConfig{Group: "g", Handle: handle, WorkerConfig: shards.WorkerConfig{Tenants: assigned}, Topic: naming.PerTenant("orders.")})}, "in"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeStaticNameInTenantSpace, kafka.Module("m", append([]kafka.Option{kafka.Brokers(nowhere)}, c.opts...)...))
			if e.Module != "m" || e.Backend != "kafka" || e.Route != c.route || !strings.Contains(e.Detail, tenancytest.TenantB.Hex()) || e.Fix == "" {
				t.Errorf("refusal %+v", e)
			}
		})
	}
	tenancytest.RequireWires(t, kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("shared", kafka.ProducerConfig{Topic: naming.Shared("orders.all")}),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant("orders.")})))
}

func TestProducerFailsClosedWithoutATenant(t *testing.T) {
	var p *kafka.Producer
	tenancytest.RequireWires(t, kafka.Module("m", kafka.Brokers(nowhere),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant("orders.")})),
		fx.Populate(fx.Annotate(&p, fx.ParamTags(`name:"orders"`))))
	err := p.Produce(context.Background(), kafka.Message{Value: []byte("x")})
	tenancytest.RequireUnbound(t, err, "m", "kafka", "orders")
	err = p.Produce(tenancy.WithGlobal(context.Background()), kafka.Message{Value: []byte("x")})
	tenancytest.RequireUnbound(t, err, "m", "kafka", "orders")
	_, err = p.TopicFor(context.Background())
	tenancytest.RequireUnbound(t, err, "m", "kafka", "orders")
	topic, err := p.TopicFor(tenancy.WithTenant(context.Background(), tenancytest.TenantA))
	if err != nil || topic != "orders."+tenancytest.TenantA.Hex() {
		t.Fatalf("topic %q, %v", topic, err)
	}
}

func TestCustomTopicResolverFailsClosed(t *testing.T) {
	var p *kafka.Producer
	bad := func(id tenancy.ID) (string, error) { return "orders/" + id.String(), nil }
	tenancytest.RequireWires(t, kafka.Module("m", kafka.Brokers(nowhere),
		kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Func(bad)})),
		fx.Populate(fx.Annotate(&p, fx.ParamTags(`name:"orders"`))))
	ctx := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := p.TopicFor(ctx); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("invalid resolved topic: %v", err)
	}
	if err := p.Produce(ctx, kafka.Message{Value: []byte("x")}); err == nil {
		t.Fatal("produced to an invalid topic")
	}
}

// TestConsumerTurnRefusedNegative: a negative Turn or MaxAhead is refused
// with the route and the field to fix, not taken for the default.
func TestConsumerTurnRefusedNegative(t *testing.T) {
	for _, c := range []struct {
		field string
		set   func(*kafka.ConsumerConfig)
	}{
		{"Turn", func(c *kafka.ConsumerConfig) { c.Turn = -1 }},
		{"MaxAhead", func(c *kafka.ConsumerConfig) { c.MaxAhead = -100 }},
	} {
		t.Run(c.field, func(t *testing.T) {
			cfg := kafka.ConsumerConfig{Group: "g", Handle: handle, TenantFromHeaders: true, DeadLetter: deadLetter, Topic: naming.Shared("t")}
			c.set(&cfg)
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", cfg)))
			t.Log(e)
			for _, want := range []string{"module=m", "route=c", c.field + " must not be negative", "fix: set kafka.ConsumerConfig." + c.field} {
				if !strings.Contains(e.Error(), want) {
					t.Errorf("refusal %q does not name %q", e.Error(), want)
				}
			}
		})
	}
}
