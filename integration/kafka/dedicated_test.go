package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Dedicated: each tenant's records go to its own cluster, through a routed
// client built from its own credentials. Tenant A's cluster is the test
// broker, tenant B's the second test broker: two real clusters, each read
// back with a plain client to find only its own tenant's records.
func TestDedicatedRoutedClusters(t *testing.T) {
	s := newSpace(t)
	brokerA := s.broker
	brokerB := strings.Split(testsvc.KafkaSecondBroker(t), ",")[0]
	s.alsoOn(t, brokerB)
	endpoints := map[tenancy.ID]string{tenantA: brokerA, tenantB: brokerB}
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		ep, ok := endpoints[id]
		if !ok {
			return routing.Credentials{}, fmt.Errorf("no cluster for tenant %s", id)
		}
		return routing.Credentials{Endpoint: ep}, nil
	}
	got := newReceived()
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Routed(resolve, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4}}), modules.RequiredIsolation(tenancy.Dedicated),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared(s.name("orders"))}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("billing"), Handle: got.handle, WorkerConfig: shards.WorkerConfig{Tenants: tenants(tenantA, tenantB)}, Topic: naming.Shared(s.name("orders"))}),
		),
		fx.Populate(&d),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []tenancy.ID{tenantA, tenantB} {
		if err := d.Provision.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	startApp(t, app)

	values := produceEach(t, d.Producer, 5, tenantA, tenantB)
	got.waitFor(t, values...)
	probe(t, d.Producer, got)
	requireOwnTenant(t, got, values)

	// On each cluster, read by a plain client: the records of its tenant
	// only, each once, stamped with that tenant. The probe's record was
	// written under A, so it is on A's cluster alone.
	for _, c := range []struct {
		id     tenancy.ID
		broker string
		probes int
	}{{tenantA, brokerA, 1}, {tenantB, brokerB, 0}} {
		var want, have []string
		for _, v := range values {
			if strings.HasPrefix(v, c.id.String()+"/") {
				want = append(want, v)
			}
		}
		probes := 0
		for _, r := range readTopic(t, c.broker, s.name("orders")) {
			if tn := header(r, kafka.HeaderTenant); tn != c.id.String() {
				t.Errorf("%s on %s's cluster has tenant header %q", r.Value, c.id, tn)
			}
			if strings.HasPrefix(string(r.Value), "probe-") {
				probes++
				continue
			}
			have = append(have, string(r.Value))
		}
		if !slices.Equal(have, want) || probes != c.probes {
			t.Errorf("%s's cluster holds %v and %d probe records, want %v and %d", c.id, have, probes, want, c.probes)
		}
	}

	// A tenant with no credentials gets an error, never another's cluster.
	if err := d.Producer.Produce(tenancy.WithTenant(ctx, tenantC), kafka.Message{Value: []byte("c")}); err == nil {
		t.Fatal("tenant without a cluster produced")
	}
	if err := d.Producer.Produce(tenancy.WithGlobal(ctx), kafka.Message{Value: []byte("g")}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("global produce on a routed client: %v", err)
	}
}
