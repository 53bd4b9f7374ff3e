package kafka_test

import (
	"context"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A refused app is refused during fx.New, with a live broker at hand: no
// consumer ever joins a group.
func TestRefusedWiringNeverConsumes(t *testing.T) {
	s := newSpace(t)
	broker, group := s.broker, s.name("refused")
	handle := func(context.Context, kafkago.Message) error {
		t.Error("a refused app handled a record")
		return nil
	}
	tenancytest.RequireRefused(t, tenancy.CodeTenantGlobalRequired, kafka.Module("events", kafka.Brokers(broker),
		kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: group, Handle: handle, Topic: naming.PerTenant(s.name("orders."))})))
	tenancytest.RequireRefused(t, "kafka_tenancy_validation_failed", kafka.Module("events", kafka.Brokers(broker),
		kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: group, Handle: handle, Topic: naming.Shared(s.name("orders")), TenantAware: true})))
	tenancytest.RequireRefused(t, "kafka_tenancy_validation_failed", kafka.Module("events", kafka.Brokers(broker),
		modules.RequiredIsolation(tenancy.Namespace),
		kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: group, Handle: handle, Topic: naming.Shared(s.name("orders"))})))

	// The broker is shared: only this test's groups count.
	c, closeAdmin := admin(broker)
	defer closeAdmin()
	resp, err := c.ListGroups(context.Background(), &kafkago.ListGroupsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range resp.Groups {
		if strings.HasPrefix(g.GroupID, group) {
			t.Errorf("group joined by a refused app: %s", g.GroupID)
		}
	}
}
