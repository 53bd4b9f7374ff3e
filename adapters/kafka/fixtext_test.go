package kafka_test

import (
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Every wiring refusal says exactly what to change, naming the config
// struct field.
func TestOptionRefusalsSayWhatToChange(t *testing.T) {
	for name, c := range map[string]struct {
		opt fx.Option
		fix string
	}{
		"no topic":            {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{})), "set kafka.ProducerConfig.Topic to a topic name, or kafka.ProducerConfig.TopicPrefix"},
		"both topics":         {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: "t", TopicPrefix: "t."})), "keep one of kafka.ProducerConfig.Topic"},
		"bad topic":           {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: "a/b"})), "rename the topic in kafka.ProducerConfig.Topic: 1 to 249 characters"},
		"bad prefix":          {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{TopicPrefix: "a b"})), "set kafka.ProducerConfig.TopicPrefix to at most 217 characters"},
		"partitions":          {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: "t", Partitions: -1, ReplicationFactor: 1})), "set kafka.ProducerConfig.Partitions to 0 (1 partition) or more, not -1"},
		"no group":            {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Handle: handle, Topic: "t"})), "set kafka.ConsumerConfig.Group"},
		"no handle":           {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Topic: "t"})), "set kafka.ConsumerConfig.Handle"},
		"no dlq":              {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle, TenantFromHeaders: true, Topic: "t"})), "set kafka.ConsumerConfig.DeadLetter"},
		"consumer no topic":   {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle})), "set kafka.ConsumerConfig.Topic to a topic name"},
		"prefix and resolver": {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle, TopicPrefix: "t.", Topics: kafka.TenantTopic("u.")})), "keep one of kafka.ConsumerConfig.Topic"},
		"shared shards":       {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle, Tenants: assigned, Topic: "t"})), "replace kafka.ConsumerConfig.Topic with kafka.ConsumerConfig.TopicPrefix"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, c.opt)
			if !strings.Contains(e.Fix, c.fix) {
				t.Errorf("fix %q lacks %q", e.Fix, c.fix)
			}
		})
	}
}
