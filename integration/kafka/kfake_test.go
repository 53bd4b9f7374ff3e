package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/tenancy"
)

// The tests in this file run against kfake, an in-process Kafka, because
// they need what the shared test broker cannot give: a broker that goes
// away in the middle of a test, or a second cluster. Everything else runs
// against the real broker (newSpace).

// fakeCluster starts an in-process kfake broker on 127.0.0.1.
func fakeCluster(t *testing.T, opts ...kfake.Opt) (*kfake.Cluster, string) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()[0]
}

// The broker vanishing mid-run: producing fails with an error (no panic),
// and the app still stops cleanly, leaving no goroutine behind. On kfake:
// the shared test broker cannot be taken away under the other tests.
func TestBrokerGoneMidRunKfake(t *testing.T) {
	c, broker := fakeCluster(t)
	got := newReceived()
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(broker),
			kafka.ProducerRoute("orders", kafka.TenantTopics("orders.")),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: "g", Handle: got.handle, Tenants: tenants(tenantA),
				OnError: func(error) {}}, kafka.TenantTopics("orders."))),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Provision.Provision(ctx, tenantA); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	values := produceEach(t, d.Producer, 1, tenantA)
	got.waitFor(t, values...)
	c.Close()
	if err := d.Producer.Produce(tenancy.WithTenant(ctx, tenantA), kafka.Message{Value: []byte("lost")}); err == nil {
		t.Fatal("produced with the broker gone")
	}
	stopCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	begin := time.Now()
	if err := app.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v with the broker gone", time.Since(begin))
}
