package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/tenancy"
)

// ensureCurrent refuses a write for tenant when its topics are behind the
// required version; c is the tenant's client. It is the version gate of
// the route's entry.
func (r *route) ensureCurrent(ctx context.Context, tenant tenancy.ID, c *client) error {
	if !r.perTenantTopic && !r.routed {
		return nil // a static topic of the shared client: no tenant's to migrate
	}
	return r.core.gate.Check(ctx, tenant, c.target, r.spec.name, func(ctx context.Context) (int64, error) {
		return r.core.topicVersion(ctx, c, tenant)
	})
}

// dynamicTopicConfig is DescribeConfigs' source of a setting made on the
// topic itself.
const dynamicTopicConfig = 1

// topicVersion is the newest version of the module's set whose
// configuration tenant's topics carry (0: none): at version v, every
// setting a step up to v set has its value, and every one it deleted is
// not set on the topic.
func (c *core) topicVersion(ctx context.Context, cl *client, tenant tenancy.ID) (int64, error) {
	steps := c.versions.steps
	stepTopics := make([][]string, len(steps))
	names := map[string]map[string]bool{}
	for i, ts := range steps {
		tops, err := c.stepTopics(tenant, ts)
		if err != nil {
			return 0, err
		}
		stepTopics[i] = tops
		for _, t := range tops {
			if names[t] == nil {
				names[t] = map[string]bool{}
			}
			for k := range ts.Configs {
				names[t][k] = true
			}
		}
	}
	if len(names) == 0 {
		return c.versions.set.Latest(), nil
	}
	req := &kafkago.DescribeConfigsRequest{}
	for _, t := range slices.Sorted(maps.Keys(names)) {
		req.Resources = append(req.Resources, kafkago.DescribeConfigRequestResource{
			ResourceType: kafkago.ResourceTypeTopic, ResourceName: t, ConfigNames: slices.Sorted(maps.Keys(names[t]))})
	}
	resp, err := cl.admin().DescribeConfigs(ctx, req)
	if err != nil {
		cl.recover(err)
		return 0, fmt.Errorf("kafka: module %s: reading tenant %s's topic configs: %w", c.module, tenant, err)
	}
	type entry struct {
		value   string
		dynamic bool
	}
	have := map[string]map[string]entry{}
	for _, r := range resp.Resources {
		if errors.Is(r.Error, kafkago.UnknownTopicOrPartition) {
			return 0, nil // not provisioned: at no version
		}
		if r.Error != nil {
			return 0, fmt.Errorf("kafka: module %s: reading topic %s's configs: %w", c.module, r.ResourceName, r.Error)
		}
		m := map[string]entry{}
		for _, e := range r.ConfigEntries {
			m[e.ConfigName] = entry{e.ConfigValue, e.ConfigSource == dynamicTopicConfig}
		}
		have[r.ResourceName] = m
	}
	want := map[string]map[string]*string{}
	var at int64
	for i, ts := range steps {
		for _, t := range stepTopics[i] {
			if want[t] == nil {
				want[t] = map[string]*string{}
			}
			maps.Copy(want[t], ts.Configs)
		}
		ok := true
		for t, kv := range want {
			for k, v := range kv {
				e, set := have[t][k]
				if v == nil && set && e.dynamic || v != nil && (!set || e.value != *v) {
					ok = false
				}
			}
		}
		if ok {
			at = c.versions.set[i].Version
		}
	}
	return at, nil
}
