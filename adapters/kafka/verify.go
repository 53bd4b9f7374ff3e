package kafka

import (
	"context"
	"fmt"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// deletionWait bounds how long Verify waits for the brokers to stop
// listing a deleted topic: a deletion completes asynchronously.
const deletionWait = 15 * time.Second

// Verify checks that none of tenant's topics exists any more: the topics
// Teardown deletes (tenantTopics, one declaration), looked up on the
// brokers until they are gone or deletionWait passed. Records of the
// tenant in a shared topic (a tenant-aware route's header) cannot be
// deleted one by one: the erasure lists them as kept until the topic's
// retention removes them.
func (p *lifecycleTarget) Verify(ctx context.Context, tenant tenancy.ID) (migrate.Erasure, error) {
	topics, err := p.tenantTopics(tenant)
	if err != nil {
		return migrate.Erasure{}, err
	}
	var names []string
	for _, t := range uniqueTopics(topics) {
		names = append(names, t.Topic)
	}
	var e migrate.Erasure
	if err := p.keepShared(&e); err != nil {
		return e, err
	}
	if len(names) == 0 {
		return e, nil
	}
	c, release, err := p.core.clientFor(ctx, tenant)
	if err != nil {
		return e, err
	}
	defer release()
	cl := c.probe(names)
	defer closeProbe(cl)
	left := map[string]bool{}
	for deadline := time.Now().Add(deletionWait); ; {
		res, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: names})
		if err != nil {
			return e, fmt.Errorf("kafka: module %s: verifying the topics of tenant %s: %w", p.core.module, tenant, err)
		}
		absent, err := absentTopics(p.core.module, res, names)
		if err != nil {
			return e, err
		}
		clear(left)
		for _, n := range names {
			left[n] = true
		}
		for _, n := range absent {
			delete(left, n)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return e, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	for _, n := range names {
		var count int64
		if left[n] {
			count = 1
		}
		e.Check(migrate.Family{Name: "topic", Kind: migrate.KindTopic, Where: n}, count, n)
	}
	return e, nil
}

// keepShared lists, once per topic, the shared topics: a record written
// there for a bound tenant carries it in a header, and Kafka removes
// records only by the topic's retention.
func (p *lifecycleTarget) keepShared(e *migrate.Erasure) error {
	if p.core.pools != nil {
		return nil // routed: every topic is on the tenant's own brokers
	}
	seen := map[string]bool{}
	for _, r := range p.routes {
		rt := newRoute(p.core, r)
		if rt.perTenantTopic {
			continue
		}
		name, err := rt.topicFor(tenancy.ID{})
		if err != nil {
			return err
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		e.Keep(migrate.Family{Name: "records in shared topic", Kind: migrate.KindRecords, Where: name, Route: r.name},
			"Kafka deletes records only by the topic's retention (retention.ms) or compaction; the tenant's records there stay until then")
	}
	return nil
}
