package kafka

import (
	"fmt"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// ProducerConfig declares a producer route; a zero Topic is refused at
// wiring.
type ProducerConfig struct {
	// Topic is naming.Shared(name), one static topic for every tenant (tier
	// none, or dedicated on a routed client); naming.PerTenant(prefix), one
	// topic per tenant named the prefix followed by the tenant's 32
	// lowercase hex digits (namespace; a prefix of at most 217 characters
	// of [a-zA-Z0-9._-]); or naming.Func(fn), a custom resolver
	// (namespace) that must be injective, its output validated on every
	// call.
	Topic naming.Name
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
	return modules.Own(func(c *config) {
		c.routes = append(c.routes, newSpec(name, kindProducer, "kafka.ProducerConfig", topicFields{
			cfg.Topic, cfg.TenantAware, cfg.Partitions, cfg.ReplicationFactor,
		}))
	})
}

// topicFields are the fields ProducerConfig and ConsumerConfig share.
type topicFields struct {
	topic       naming.Name
	tenantAware bool
	partitions  int
	replication int
}

type routeSpec struct {
	name        string
	kind        floors.Kind
	cfgType     string // "kafka.ProducerConfig" or "kafka.ConsumerConfig", for fix texts
	topic       string
	perTenant   topicFunc
	prefix      string // naming.PerTenant's prefix, for collision checks
	tenantAware bool
	partitions  int
	replication int
	bad         []tenancy.Problem
}

func newSpec(name string, kind floors.Kind, cfgType string, f topicFields) *routeSpec {
	r := &routeSpec{name: name, kind: kind, cfgType: cfgType, tenantAware: f.tenantAware,
		partitions: f.partitions, replication: f.replication}
	switch t := f.topic; {
	case t.Func() != nil:
		r.perTenant = t.Func()
	case t.PerTenant():
		if err := validPrefix(t.Base()); err != nil {
			r.bad = append(r.bad, tenancy.Problem{Detail: err.Error(), Fix: fmt.Sprintf("set %s.Topic to naming.PerTenant(prefix) with a prefix of at most %d characters of [a-zA-Z0-9._-] (the tenant's 32 hex digits follow it)", cfgType, maxTopicLen-32)})
		}
		r.perTenant, r.prefix = tenantTopic(t.Base()), t.Base()
	default:
		r.topic = t.Base()
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

func (r *routeSpec) validate() []tenancy.Problem {
	bad := append([]tenancy.Problem(nil), r.bad...)
	if r.name == "" {
		bad = append(bad, tenancy.Problem{Detail: "a route needs a name", Fix: "pass a non-empty name to kafka.ProducerRoute or kafka.Consumer"})
	}
	switch {
	case len(r.bad) > 0: // the topic fields are already refused
	case r.topic == "" && r.perTenant == nil:
		bad = append(bad, tenancy.Problem{Detail: "a route needs a topic",
			Fix: fmt.Sprintf("set %[1]s.Topic to naming.Shared(name), or naming.PerTenant(prefix) for one topic per tenant (namespace)", r.cfgType)})
	case r.perTenant == nil:
		if err := validTopic(r.topic); err != nil {
			bad = append(bad, tenancy.Problem{Detail: err.Error(), Fix: fmt.Sprintf("rename the topic of %s.Topic: 1 to %d characters of [a-zA-Z0-9._-], not \".\" or \"..\"", r.cfgType, maxTopicLen)})
		}
	}
	if r.partitions < 0 {
		bad = append(bad, tenancy.Problem{Detail: "Partitions must not be negative",
			Fix: fmt.Sprintf("set %s.Partitions to 0 (1 partition) or more, not %d", r.cfgType, r.partitions)})
	}
	return bad
}
