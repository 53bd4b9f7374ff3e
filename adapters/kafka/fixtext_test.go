package kafka_test

import (
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Every option refusal says exactly what to change, naming the option.
func TestOptionRefusalsSayWhatToChange(t *testing.T) {
	for name, c := range map[string]struct {
		opt fx.Option
		fix string
	}{
		"no topic":      {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p")), "add kafka.Topic(name), or kafka.TenantTopics(prefix)"},
		"both topics":   {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.Topic("t"), kafka.TenantTopics("t."))), "drop kafka.Topic"},
		"bad topic":     {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.Topic("a/b"))), "rename the topic: 1 to 249 characters"},
		"bad prefix":    {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.TenantTopics("a b"))), "a prefix of at most 217 characters"},
		"partitions":    {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.Topic("t"), kafka.Partitions(-1, 1))), "not -1"},
		"no group":      {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Handle: handle}, kafka.Topic("t"))), "set ConsumerConfig.Group"},
		"no handle":     {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g"}, kafka.Topic("t"))), "set ConsumerConfig.Handle"},
		"no dlq":        {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle, TenantFromHeaders: true}, kafka.Topic("t"))), "set ConsumerConfig.DeadLetter"},
		"shared shards": {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle, Tenants: assigned}, kafka.Topic("t"))), "replace kafka.Topic with kafka.TenantTopics(prefix)"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, c.opt)
			if !strings.Contains(e.Fix, c.fix) {
				t.Errorf("fix %q lacks %q", e.Fix, c.fix)
			}
		})
	}
}
