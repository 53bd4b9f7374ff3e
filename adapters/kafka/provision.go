package kafka

import (
	"context"
	"errors"
	"fmt"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Teardown deletes tenant's topics: the ones Provision creates (its
// per-tenant topics, and on a routed client the static topics in its own
// cluster). A topic already gone counts as deleted, so a rerun completes
// an interrupted teardown.
func (p *lifecycleTarget) Teardown(ctx context.Context, tenant tenancy.ID) error {
	topics, err := p.tenantTopics(tenant)
	if err != nil || len(topics) == 0 {
		return err
	}
	c, release, err := p.core.clientFor(ctx, tenant)
	if err != nil {
		return err
	}
	defer release()
	names := make([]string, 0, len(topics))
	seen := map[string]bool{}
	for _, t := range topics {
		if !seen[t.Topic] {
			seen[t.Topic] = true
			names = append(names, t.Topic)
		}
	}
	resp, err := c.admin().DeleteTopics(ctx, &kafkago.DeleteTopicsRequest{Topics: names})
	if err != nil {
		c.recover(err)
		return fmt.Errorf("kafka: module %s: deleting the topics of tenant %s: %w", p.core.module, tenant, err)
	}
	var errs []error
	for name, e := range resp.Errors {
		if e != nil && !errors.Is(e, kafkago.UnknownTopicOrPartition) {
			errs = append(errs, fmt.Errorf("kafka: module %s: deleting topic %s: %w", p.core.module, name, e))
		}
	}
	return errors.Join(errs...)
}

// Provision creates tenant's topics (every per-tenant topic of the module
// and, on a routed client, the static topics too, in the tenant's own
// cluster), returning once the brokers serve them. For the zero tenant it
// creates the module's static topics on a shared client (on a routed
// client there is nothing shared).
func (p *lifecycleTarget) Provision(ctx context.Context, tenant tenancy.ID) error {
	if tenant.IsZero() {
		return p.provisionShared(ctx)
	}
	topics, err := p.tenantTopics(tenant)
	if err != nil {
		return err
	}
	return p.create(ctx, tenant, topics)
}

// tenantTopics is the topics Provision creates for tenant.
func (p *lifecycleTarget) tenantTopics(tenant tenancy.ID) ([]kafkago.TopicConfig, error) {
	if tenant.IsZero() {
		return nil, tenancy.Unbound()
	}
	var topics []kafkago.TopicConfig
	for _, r := range p.routes {
		rt := newRoute(p.core, r)
		if !rt.perTenantTopic && !rt.routed {
			continue
		}
		name, err := rt.topicFor(tenant)
		if err != nil {
			return nil, err
		}
		topics = append(topics, topicConfig(name, r))
	}
	return topics, nil
}

func (p *lifecycleTarget) provisionShared(ctx context.Context) error {
	if p.core.pools != nil {
		return nil
	}
	var topics []kafkago.TopicConfig
	for _, r := range p.routes {
		if rt := newRoute(p.core, r); !rt.perTenantTopic {
			name, err := rt.topicFor(tenancy.ID{})
			if err != nil {
				return err
			}
			topics = append(topics, topicConfig(name, r))
		}
	}
	return p.create(ctx, tenancy.ID{}, topics)
}

func topicConfig(name string, r *routeSpec) kafkago.TopicConfig {
	tc := kafkago.TopicConfig{Topic: name, NumPartitions: r.partitions, ReplicationFactor: r.replication}
	if tc.NumPartitions == 0 {
		tc.NumPartitions = 1
	}
	if tc.ReplicationFactor == 0 {
		tc.ReplicationFactor = -1 // the broker's default
	}
	return tc
}

func (p *lifecycleTarget) create(ctx context.Context, tenant tenancy.ID, topics []kafkago.TopicConfig) error {
	perTopic, err := p.createTopics(ctx, tenant, topics)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range perTopic {
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// uniqueTopics is topics with each topic once, in order: routes may share
// a topic (a producer and its consumer).
func uniqueTopics(topics []kafkago.TopicConfig) []kafkago.TopicConfig {
	seen := map[string]bool{}
	var uniq []kafkago.TopicConfig
	for _, t := range topics {
		if !seen[t.Topic] {
			seen[t.Topic] = true
			uniq = append(uniq, t)
		}
	}
	return uniq
}

// createTopics creates topics on tenant's client (zero: the shared one)
// in one request; it returns the topics that failed, an existing topic
// not counting.
func (p *lifecycleTarget) createTopics(ctx context.Context, tenant tenancy.ID, topics []kafkago.TopicConfig) (map[string]error, error) {
	uniq := uniqueTopics(topics)
	if len(uniq) == 0 {
		return nil, nil
	}
	c, release, err := p.core.clientFor(ctx, tenant)
	if err != nil {
		return nil, err
	}
	defer release()
	names := make([]string, len(uniq))
	for i, t := range uniq {
		names[i] = t.Topic
	}
	// A probe of these topics, not the shared transport: creating through
	// the shared one would refetch every topic's metadata per call.
	cl := c.probe(names)
	defer closeProbe(cl)
	resp, err := cl.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: uniq})
	if err != nil {
		return nil, fmt.Errorf("kafka: module %s: creating topics: %w", p.core.module, err)
	}
	failed := map[string]error{}
	var made []string
	for _, name := range names {
		if e := resp.Errors[name]; e != nil && !errors.Is(e, kafkago.TopicAlreadyExists) {
			failed[name] = fmt.Errorf("kafka: module %s: creating topic %s: %w", p.core.module, name, e)
		} else {
			made = append(made, name)
		}
	}
	if len(made) == 0 {
		return failed, nil
	}
	// Topic creation is asynchronous: return only once the brokers serve
	// every partition, so that a produce right after Provision finds a
	// leader.
	if err := awaitServed(ctx, cl, made); err != nil {
		return nil, fmt.Errorf("kafka: module %s: %w", p.core.module, err)
	}
	// The shared writer reads its partitions from the transport's metadata
	// cache, refreshed every few seconds: drop it, so that the next produce
	// fetches metadata that names the new topics. One drop per call, so
	// ProvisionAll pays one per batch.
	c.transport.CloseIdleConnections()
	return failed, nil
}
