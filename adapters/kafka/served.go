package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/migrate"
)

// probe is a short-lived transport of c's brokers and credentials whose
// metadata names only topics: what it reports comes from the brokers, never
// from the shared transport's cache, and costs a request of those topics,
// not of every topic of the cluster. Its metadata is refetched every
// 100 ms at most, for awaitServed. The caller closes it.
func (c *client) probe(topics []string) *kafkago.Client {
	return c.probeFor(topics, 100*time.Millisecond)
}

// probeFor is probe with its metadata kept for ttl.
func (c *client) probeFor(topics []string, ttl time.Duration) *kafkago.Client {
	tr := &kafkago.Transport{Dial: c.conns.dialTracked, SASL: c.transport.SASL, TLS: c.transport.TLS,
		DialTimeout: c.transport.DialTimeout, MetadataTopics: topics, MetadataTTL: ttl}
	return &kafkago.Client{Addr: kafkago.TCP(c.brokers...), Transport: c.wrapped(tr), Timeout: 10 * time.Second}
}

func closeProbe(cl *kafkago.Client) { cl.Transport.(idleCloser).CloseIdleConnections() }

// unserved is the topics of res that a producer could not write to yet:
// unknown, or with a partition that has no leader.
func unserved(res *kafkago.MetadataResponse, topics []string) []string {
	ok := map[string]bool{}
	for _, t := range res.Topics {
		if t.Error != nil || len(t.Partitions) == 0 {
			continue
		}
		led := true
		for _, p := range t.Partitions {
			if p.Error != nil || p.Leader.Host == "" {
				led = false
			}
		}
		ok[t.Name] = led
	}
	var out []string
	for _, t := range topics {
		if !ok[t] {
			out = append(out, t)
		}
	}
	return out
}

// servedWait bounds awaitServed when the caller's context does not.
const servedWait = 30 * time.Second

// awaitServed returns once every topic has a leader for each partition in
// the metadata the probe cl fetches, or fails when ctx (at most
// servedWait) ends first.
func awaitServed(ctx context.Context, cl *kafkago.Client, topics []string) error {
	ctx, cancel := context.WithTimeout(ctx, servedWait)
	defer cancel()
	pending := topics
	for {
		res, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: topics})
		if err == nil {
			if pending = unserved(res, topics); len(pending) == 0 {
				return nil
			}
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			if err == nil {
				err = ctx.Err()
			}
			return fmt.Errorf("topics not yet served by the brokers (a partition without a leader): %v: %w", first(pending, 3), err)
		case <-t.C:
		}
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// missingTopics asks the brokers which of topics do not exist (or have a
// partition without a leader), in one metadata request of those topics.
func (c *client) missingTopics(ctx context.Context, topics []string) ([]string, error) {
	cl := c.probe(topics)
	defer closeProbe(cl)
	res, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, err
	}
	return unserved(res, topics), nil
}

// isUnknownTopic reports whether err from a write says a topic is unknown:
// kafka-go answers so from its metadata cache before sending anything, and
// a broker answers so for a topic it does not have.
func isUnknownTopic(err error) bool {
	if errors.Is(err, kafkago.UnknownTopicOrPartition) {
		return true
	}
	var we kafkago.WriteErrors
	if errors.As(err, &we) {
		return slices.ContainsFunc(we, func(e error) bool { return errors.Is(e, kafkago.UnknownTopicOrPartition) })
	}
	return false
}

// isLeaderMoving reports whether err from a write says a partition's
// leader is not where the metadata said (a fresh topic, a leader change).
func isLeaderMoving(err error) bool {
	moving := func(e error) bool {
		return errors.Is(e, kafkago.NotLeaderForPartition) || errors.Is(e, kafkago.LeaderNotAvailable)
	}
	if moving(err) {
		return true
	}
	var we kafkago.WriteErrors
	return errors.As(err, &we) && slices.ContainsFunc(we, func(e error) bool { return e != nil && moving(e) })
}

// failedOf is the messages of msgs that err says failed: all of them
// unless err has a result per message.
func failedOf(msgs []kafkago.Message, err error) []kafkago.Message {
	var we kafkago.WriteErrors
	if !errors.As(err, &we) || len(we) != len(msgs) {
		return msgs
	}
	var out []kafkago.Message
	for i, e := range we {
		if e != nil {
			out = append(out, msgs[i])
		}
	}
	return out
}

// notProvisioned is the error of a call whose per-tenant topic (or routed
// tenant's topic) does not exist: tenant_not_provisioned, the fix naming
// Provision. cause is what the broker or kafka-go said.
func notProvisioned(module, route, topic string, cause error) error {
	return migrate.NotProvisioned(migrate.Unprovisioned{Module: module, Backend: rules.Name, Route: route,
		What: "topic " + topic, Cause: fmt.Sprint(cause), Creates: "its topics, returning once the brokers serve them"})
}
