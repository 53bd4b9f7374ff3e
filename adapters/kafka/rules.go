package kafka

import (
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Route kinds of the Kafka backend.
const (
	kindProducer floors.Kind = "producer"
	kindConsumer floors.Kind = "consumer"
)

// roleTopic is the one relation a Kafka route names: its topic.
const roleTopic = "topic"

// noTagged is why Kafka refuses TenantAware, for the matrix and the docs.
const noTagged = "a topic has no row filter, so Kafka has no tagged tier: per-tenant topic → namespace, routed client → dedicated"

// Rules is what Kafka can reach and how each route kind derives its tier.
// Enforcement, the CLI and the docs read it; each call returns a fresh value, so no
// caller can change what the adapter enforces.
func Rules() floors.Backend {
	return floors.Backend{
		Name:    "kafka",
		Ceiling: tenancy.Dedicated,
		Kinds: map[floors.Kind]floors.KindRule{
			kindProducer: {Summary: "writes records to a static or per-tenant topic, tenant and event id in headers",
				NoTagged: true, Note: noTagged},
			kindConsumer: {Summary: "consumer-group worker: unbound, tenant from headers (opt-in) or sharded per tenant topic",
				NoTagged: true, Note: noTagged},
		},
	}
}

// rules is the package's own copy, read on every call.
var rules = Rules()
