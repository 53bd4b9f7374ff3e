package kafka

import (
	"fmt"

	"github.com/tenantwire/tenantwire/floors"
)

// ProducerConfig declares a producer route. Exactly one of Topic,
// TopicPrefix and Topics is set; the zero value is refused at wiring.
type ProducerConfig struct {
	// Topic is one static topic for every tenant (tier none, or dedicated
	// on a routed client).
	Topic string
	// TopicPrefix names one topic per tenant, the prefix followed by the
	// tenant's 32 lowercase hex digits (namespace): at most 217 characters
	// of [a-zA-Z0-9._-].
	TopicPrefix string
	// Topics names a tenant's topic with a custom resolver (namespace). It
	// must be injective; TenantTopic(prefix) is by construction, and its
	// output is validated on every call.
	Topics TopicFunc
	// TenantAware is refused (kafka_tenancy_validation_failed): a topic has
	// no row filter, so a route ported from a tagged backend is told why
	// instead of silently isolating nothing.
	TenantAware bool
	// Partitions is the partition count provisioning creates the route's
	// topics with (0: 1 partition).
	Partitions int
	// ReplicationFactor is the replication factor provisioning creates the
	// route's topics with (0 or -1: the broker's default).
	ReplicationFactor int
}

// ProducerRoute adds a producer route; its *Producer is provided as
// name:"<route>" and is also an outbox.Destination.
func ProducerRoute(name string, cfg ProducerConfig) Option {
	return func(c *config) {
		c.routes = append(c.routes, newSpec(name, kindProducer, "kafka.ProducerConfig", topicFields{
			cfg.Topic, cfg.TopicPrefix, cfg.Topics, cfg.TenantAware, cfg.Partitions, cfg.ReplicationFactor,
		}))
	}
}

// topicFields are the fields ProducerConfig and ConsumerConfig share.
type topicFields struct {
	topic       string
	prefix      string
	topics      TopicFunc
	tenantAware bool
	partitions  int
	replication int
}

type routeSpec struct {
	name        string
	kind        floors.Kind
	cfgType     string // "kafka.ProducerConfig" or "kafka.ConsumerConfig", for fix texts
	topic       string
	perTenant   TopicFunc
	prefix      string // set by TopicPrefix, for collision checks
	tenantAware bool
	partitions  int
	replication int
	bad         []problem
}

func newSpec(name string, kind floors.Kind, cfgType string, f topicFields) *routeSpec {
	r := &routeSpec{name: name, kind: kind, cfgType: cfgType, topic: f.topic, tenantAware: f.tenantAware,
		partitions: f.partitions, replication: f.replication}
	set := 0
	for _, ok := range []bool{f.topic != "", f.prefix != "", f.topics != nil} {
		if ok {
			set++
		}
	}
	switch {
	case set > 1:
		r.bad = append(r.bad, problem{"a route has exactly one of Topic, TopicPrefix and Topics, not several",
			fmt.Sprintf("keep one of %[1]s.Topic (one shared topic), %[1]s.TopicPrefix or %[1]s.Topics (one topic per tenant, namespace)", cfgType)})
	case f.prefix != "":
		if err := validPrefix(f.prefix); err != nil {
			r.bad = append(r.bad, problem{err.Error(), fmt.Sprintf("set %s.TopicPrefix to at most %d characters of [a-zA-Z0-9._-] (the tenant's 32 hex digits follow it)", cfgType, MaxTopicLen-32)})
		}
		r.perTenant, r.prefix = TenantTopic(f.prefix), f.prefix
	case f.topics != nil:
		r.perTenant = f.topics
	}
	return r
}

// floorsRoute is the route's wiring as enforcement sees it.
func (r *routeSpec) floorsRoute(routed bool) floors.Route {
	name := r.topic
	if r.perTenant != nil {
		name = r.prefix + "<tenant>"
	}
	return floors.Route{
		Name: r.name, Kind: r.kind, TenantAware: r.tenantAware, Routed: routed,
		Relations: []floors.Relation{{Role: roleTopic, Name: name, PerTenant: r.perTenant != nil}},
	}
}

// problem is wiring the floor rules cannot express: what is wrong and
// exactly what to change.
type problem struct{ msg, fix string }

func (r *routeSpec) validate() []problem {
	bad := append([]problem(nil), r.bad...)
	if r.name == "" {
		bad = append(bad, problem{"a route needs a name", "pass a non-empty name to kafka.ProducerRoute or kafka.Consumer"})
	}
	switch {
	case len(r.bad) > 0: // the topic fields are already refused
	case r.topic == "" && r.perTenant == nil:
		bad = append(bad, problem{"a route needs a topic: Topic, TopicPrefix or Topics",
			fmt.Sprintf("set %[1]s.Topic to a topic name, or %[1]s.TopicPrefix to a prefix for one topic per tenant (namespace)", r.cfgType)})
	case r.perTenant == nil:
		if err := validTopic(r.topic); err != nil {
			bad = append(bad, problem{err.Error(), fmt.Sprintf("rename the topic in %s.Topic: 1 to %d characters of [a-zA-Z0-9._-], not \".\" or \"..\"", r.cfgType, MaxTopicLen)})
		}
	}
	if r.partitions < 0 {
		bad = append(bad, problem{"Partitions must not be negative",
			fmt.Sprintf("set %s.Partitions to 0 (1 partition) or more, not %d", r.cfgType, r.partitions)})
	}
	return bad
}
