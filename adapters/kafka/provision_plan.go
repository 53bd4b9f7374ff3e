package kafka

import (
	"context"
	"errors"
	"fmt"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/tenancy"
)

// PlanProvision lists the topics Provision would create for tenant (its
// per-tenant topics, and on a routed client the static ones in its own
// cluster) that the brokers do not have, creating nothing: ProvisionAll's
// dry run. The brokers are asked in one metadata request of those topics,
// which never creates one (kafka-go does not ask for auto-creation).
func (p *lifecycleTarget) PlanProvision(ctx context.Context, tenant tenancy.ID) ([]string, error) {
	if tenant.IsZero() {
		return nil, rules.Unbound(p.core.module, "")
	}
	topics, err := p.tenantTopics(tenant)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range uniqueTopics(topics) {
		names = append(names, t.Topic)
	}
	if len(names) == 0 {
		return nil, nil
	}
	c, release, err := p.core.clientFor(ctx, tenant)
	if err != nil {
		return nil, err
	}
	defer release()
	cl := c.probe(names)
	defer closeProbe(cl)
	res, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: names})
	if err != nil {
		return nil, fmt.Errorf("kafka: module %s: planning the topics of tenant %s: %w", p.core.module, tenant, err)
	}
	return absentTopics(p.core.module, res, names)
}

// absentTopics is the topics of names that res says do not exist. A topic
// the brokers report another error for (not authorised, say) fails the
// plan: whether it exists is not known.
func absentTopics(module string, res *kafkago.MetadataResponse, names []string) ([]string, error) {
	known := map[string]bool{}
	for _, t := range res.Topics {
		switch {
		case t.Error == nil:
			known[t.Name] = true
		case !errors.Is(t.Error, kafkago.UnknownTopicOrPartition):
			return nil, fmt.Errorf("kafka: module %s: looking up topic %s: %w", module, t.Name, t.Error)
		}
	}
	var out []string
	for _, n := range names {
		if !known[n] {
			out = append(out, n)
		}
	}
	return out, nil
}
