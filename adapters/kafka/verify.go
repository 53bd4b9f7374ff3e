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
// tenant in a shared topic are not checked: they cannot be deleted one by
// one and stay until the topic's retention removes them.
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
