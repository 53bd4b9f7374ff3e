package kafka

import (
	"context"
	"errors"
	"slices"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TestAbsentTopicsFailsClosed: a topic the brokers answer unknown (or
// leave out) is absent, one they serve is not, and one whose existence
// they do not tell (not authorised: a broker's answer the test broker
// cannot be made to give without ACLs) fails the plan.
func TestAbsentTopicsFailsClosed(t *testing.T) {
	res := &kafkago.MetadataResponse{Topics: []kafkago.Topic{
		{Name: "a"}, {Name: "b", Error: kafkago.UnknownTopicOrPartition},
	}}
	got, err := absentTopics("events", res, []string{"a", "b", "c"})
	if err != nil || !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("absent %q, %v; want [b c]", got, err)
	}
	res.Topics = append(res.Topics, kafkago.Topic{Name: "c", Error: kafkago.TopicAuthorizationFailed})
	if _, err := absentTopics("events", res, []string{"a", "b", "c"}); !errors.Is(err, kafkago.TopicAuthorizationFailed) {
		t.Fatalf("an unauthorised topic: %v, want the refusal", err)
	}
}

// TestPlanProvisionRefusesTheZeroTenant: the zero tenant has no topics of
// its own; it is refused before any request.
func TestPlanProvisionRefusesTheZeroTenant(t *testing.T) {
	p := &lifecycleTarget{core: &core{module: "events"}}
	if _, err := p.PlanProvision(context.Background(), tenancy.ID{}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("zero tenant: %v", err)
	}
}
