package kafka_test

import (
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
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
		"no topic":          {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{})), "set kafka.ProducerConfig.Topic to naming.Shared(name), or naming.PerTenant(prefix)"},
		"bad topic":         {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: naming.Shared("a/b")})), "rename the topic of kafka.ProducerConfig.Topic: 1 to 249 characters"},
		"bad prefix":        {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: naming.PerTenant("a b")})), "set kafka.ProducerConfig.Topic to naming.PerTenant(prefix) with a prefix of at most 217 characters"},
		"partitions":        {kafka.Module("m", kafka.Brokers(nowhere), kafka.ProducerRoute("p", kafka.ProducerConfig{Topic: naming.Shared("t"), Partitions: -1, ReplicationFactor: 1})), "set kafka.ProducerConfig.Partitions to 0 (1 partition) or more, not -1"},
		"no group":          {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Handle: handle, Topic: naming.Shared("t")})), "set kafka.ConsumerConfig.Group"},
		"no handle":         {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Topic: naming.Shared("t")})), "set kafka.ConsumerConfig.Handle"},
		"no dlq":            {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle, TenantFromHeaders: true, Topic: naming.Shared("t")})), "set kafka.ConsumerConfig.DeadLetter"},
		"consumer no topic": {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle})), "set kafka.ConsumerConfig.Topic to naming.Shared(name)"},
		"shared shards":     {kafka.Module("m", kafka.Brokers(nowhere), kafka.Consumer("c", kafka.ConsumerConfig{Group: "g", Handle: handle, WorkerConfig: shards.WorkerConfig{Tenants: assigned}, Topic: naming.Shared("t")})), "set kafka.ConsumerConfig.Topic to naming.PerTenant(prefix)"},
	} {
		t.Run(name, func(t *testing.T) {
			e := tenancytest.RequireRefused(t, tenancy.CodeWiringInvalid, c.opt)
			if !strings.Contains(e.Fix, c.fix) {
				t.Errorf("fix %q lacks %q", e.Fix, c.fix)
			}
		})
	}
}
