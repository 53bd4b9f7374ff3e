package kafka_test

import (
	"context"
	"os"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// The three-node test cluster (scripts/kafka.sh start-cluster) carries
// per-tenant topics with replication factor 3: provisioned through the
// adapter, every partition has three replicas, all in sync, and records
// written with acks=all reach their tenant's consumer. Opt-in: it needs
// the cluster, which the default run does not start.
func TestClusterReplicationFactorThree(t *testing.T) {
	brokers := os.Getenv("TENANTWIRE_KAFKA_CLUSTER")
	if brokers == "" {
		t.Skip("needs the three-node cluster: scripts/kafka.sh start-cluster, then " +
			"TENANTWIRE_KAFKA_CLUSTER=127.0.0.1:9192,127.0.0.1:9292,127.0.0.1:9392")
	}
	addrs := strings.Split(brokers, ",")
	s := spaceOn(t, addrs[0])
	got := newReceived()
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(addrs...), modules.RequiredIsolation(tenancy.Namespace),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("orders.")), Partitions: 3, ReplicationFactor: 3}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("billing"), Handle: got.handle,
				WorkerConfig: shards.WorkerConfig{Tenants: tenants(tenantA, tenantB)}, Topic: naming.PerTenant(s.name("orders.")), Partitions: 3, ReplicationFactor: 3}),
		),
		fx.Populate(&d))
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
	values := produceEach(t, d.Producer, 6, tenantA, tenantB)
	got.waitFor(t, values...)
	requireOwnTenant(t, got, values)

	c, closeAdmin := admin(addrs[0])
	defer closeAdmin()
	topics := []string{s.name("orders.") + tenantA.Hex(), s.name("orders.") + tenantB.Hex()}
	md, err := c.Metadata(ctx, &kafkago.MetadataRequest{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 3 || len(md.Topics) != 2 {
		t.Fatalf("%d brokers, topics %v", len(md.Brokers), md.Topics)
	}
	for _, tp := range md.Topics {
		if tp.Error != nil || len(tp.Partitions) != 3 {
			t.Fatalf("%s: %d partitions, %v", tp.Name, len(tp.Partitions), tp.Error)
		}
		for _, p := range tp.Partitions {
			if len(p.Replicas) != 3 || len(p.Isr) != 3 {
				t.Errorf("%s/%d: replicas %v, in sync %v", tp.Name, p.ID, p.Replicas, p.Isr)
			}
		}
	}
}
