package kafka_test

import (
	"context"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A refused app is refused during fx.New, with a live broker at hand: no
// consumer ever joins a group.
func TestRefusedWiringNeverConsumes(t *testing.T) {
	_, broker := cluster(t)
	handle := func(context.Context, kafkago.Message) error {
		t.Error("a refused app handled a record")
		return nil
	}
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, kafka.Module("events", kafka.Brokers(broker),
		kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: "refused", Handle: handle}, kafka.TenantTopics("orders."))))
	tenancytest.RequireRefused(t, "kafka_tenancy_validation_failed", kafka.Module("events", kafka.Brokers(broker),
		kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: "refused", Handle: handle}, kafka.Topic("orders"), kafka.TenantAware())))
	tenancytest.RequireRefused(t, "kafka_tenancy_validation_failed", kafka.Module("events", kafka.Brokers(broker),
		kafka.RequiredIsolation(tenancy.Namespace),
		kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: "refused", Handle: handle}, kafka.Topic("orders"))))

	tr := &kafkago.Transport{}
	defer tr.CloseIdleConnections()
	admin := &kafkago.Client{Addr: kafkago.TCP(broker), Transport: tr, Timeout: 5 * time.Second}
	resp, err := admin.ListGroups(context.Background(), &kafkago.ListGroupsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Groups) != 0 {
		t.Fatalf("groups joined by refused apps: %v", resp.Groups)
	}
}
