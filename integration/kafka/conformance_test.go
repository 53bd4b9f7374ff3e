package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// kitTier is one tier's app: a producer route and a sharded consumer of
// what it writes, and the cluster each tenant's records land on.
type kitTier struct {
	producer *kafka.Producer
	got      *received
	clusters map[tenancy.ID]string
	susp     *modules.Suspensions
}

// TestConformance probes every (kind, tier) cell of kafka.Rules() on the
// real brokers: namespace is a topic per tenant on the first broker,
// dedicated a routed client putting A on the first broker and B on the
// second. Each tier is one app, started once and shared by its cells.
func TestConformance(t *testing.T) {
	s := newSpace(t)
	second := strings.Split(testsvc.KafkaSecondBroker(t), ",")[0]
	s.alsoOn(t, second)
	apps := map[tenancy.Tier]kitTier{
		tenancy.Namespace: startKitTier(t, s, tenancy.Namespace, map[tenancy.ID]string{tenantA: s.broker, tenantB: s.broker}),
		tenancy.Dedicated: startKitTier(t, s, tenancy.Dedicated, map[tenancy.ID]string{tenantA: s.broker, tenantB: second}),
	}
	tenancytest.Conformance(t, kafka.Rules(), func(t *testing.T, kind floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		app := apps[tier]
		value := fmt.Sprintf("kit-%s-%s-%d", kind, tier, time.Now().UnixNano())
		write := func(ctx context.Context) error { return app.producer.Produce(ctx, kafka.Message{Value: []byte(value)}) }
		switch kind {
		case "producer":
			// A record is visible to a tenant when it is on the topic the
			// producer names for that tenant, on that tenant's cluster.
			return tenancytest.Probe{Suspensions: app.susp, Write: write, Read: func(ctx context.Context) (bool, error) {
				topic, err := app.producer.TopicFor(ctx)
				if err != nil {
					return false, err
				}
				id, _ := tenancy.FromContext(ctx)
				return slices.ContainsFunc(readTopic(t, app.clusters[id], topic), func(m kafkago.Message) bool {
					return string(m.Value) == value
				}), nil
			}}, nil
		case "consumer":
			// A record is visible to a binding when the consumer handed it
			// to the handler under that binding.
			w := app.fairWorker(t, value)
			return tenancytest.Probe{Suspensions: app.susp, Write: write, Delivered: true, Fair: &w, Read: func(ctx context.Context) (bool, error) {
				app.got.waitFor(t, value)
				return app.got.scopeOf(value) == scope(ctx), nil
			}}, nil
		}
		return tenancytest.Probe{}, tenancytest.ErrNotCovered
	})
}

// fairWorker is the tier's consumer as tenancytest.Fair drives it: B's
// records produced through the route, A's written to its topic on its
// cluster while A is suspended, so the consumer must leave them and serve
// B; prefix makes the cell's values unique.
func (k kitTier) fairWorker(t *testing.T, prefix string) tenancytest.Worker {
	seq := 0
	values := func(n int) []string {
		var vs []string
		for range n {
			seq++
			vs = append(vs, fmt.Sprintf("%s-fair-%d", prefix, seq))
		}
		return vs
	}
	return tenancytest.Worker{
		Enqueue: func(ctx context.Context, n int) ([]string, error) {
			vs := values(n)
			for _, v := range vs {
				if err := k.producer.Produce(tenancy.WithTenant(ctx, tenantB), kafka.Message{Value: []byte(v)}); err != nil {
					return nil, err
				}
			}
			return vs, nil
		},
		Park: func(ctx context.Context) ([]string, error) {
			topic, err := k.producer.TopicFor(tenancy.WithTenant(ctx, tenantA))
			if err != nil {
				return nil, err
			}
			k.susp.Suspend(tenantA)
			vs := values(5)
			raw := rawWriter(t, k.clusters[tenantA])
			for _, v := range vs {
				if err := raw.WriteMessages(ctx, kafkago.Message{Topic: topic, Value: []byte(v)}); err != nil {
					return nil, err
				}
			}
			return vs, nil
		},
		Restore:   func(context.Context) error { k.susp.Resume(tenantA); return nil },
		Delivered: k.got.times,
		N:         5, Rounds: 3,
	}
}

// startKitTier starts a producer and a consumer sharded over A and B at
// tier, on topics provisioned for both.
func startKitTier(t *testing.T, s *space, tier tenancy.Tier, clusters map[tenancy.ID]string) kitTier {
	k := kitTier{got: newReceived(), clusters: clusters, susp: &modules.Suspensions{}}
	conn := kafka.Brokers(s.broker)
	producer := kafka.ProducerConfig{Topic: naming.PerTenant(s.name("kit-ns."))}
	if tier == tenancy.Dedicated {
		conn = kafka.Routed(func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
			ep, ok := clusters[id]
			if !ok {
				return routing.Credentials{}, fmt.Errorf("no cluster for tenant %s", id)
			}
			return routing.Credentials{Endpoint: ep}, nil
		}, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4}})
		producer = kafka.ProducerConfig{Topic: naming.Shared(s.name("kit-ded"))}
	}
	var d deps
	app := fx.New(fx.NopLogger, fx.Supply(k.susp),
		kafka.Module("events", conn, modules.RequiredIsolation(tier),
			kafka.ProducerRoute("orders", producer),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("kit-" + tier.String()), Handle: k.got.handle,
				WorkerConfig: shards.WorkerConfig{Tenants: tenants(tenantA, tenantB)}, Topic: producer.Topic})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []tenancy.ID{tenantA, tenantB} {
		if err := d.Provision.Provision(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	startApp(t, app)
	k.producer = d.Producer
	return k
}
