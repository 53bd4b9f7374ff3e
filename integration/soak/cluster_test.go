package soak_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tenantwire/tenantwire/internal/testsvc"
)

// The long run's Kafka legs run on a real three-node KRaft cluster
// (scripts/kafka.sh start-cluster: every node broker and controller,
// default replication factor 3, min.insync.replicas 2), which the soak
// starts if it is not running. Its faults kill and stop nodes of that
// cluster, so nothing else may use it while a soak runs: the default test
// run does not (the cluster test in integration/kafka is opt-in).
type kafkaCluster struct {
	script string
	nodes  []int // node ids; node n's broker listens on 127.0.0.1:9n92
}

const (
	clusterReplicas = 3
	clusterMinISR   = 2
)

func startKafkaCluster(t *testing.T) *kafkaCluster {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		missing(t, "java (the Kafka cluster runs on the JVM)")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "kafka.sh"))
	if err != nil {
		t.Fatal(err)
	}
	c := &kafkaCluster{script: script, nodes: []int{1, 2, 3}}
	if out, err := c.run("start-cluster"); err != nil {
		if testsvc.Required() || os.Getenv("TENANTWIRE_SOAK") == "1" {
			t.Fatalf("scripts/kafka.sh start-cluster: %v\n%s", err, out)
		}
		t.Skipf("SKIPPED: scripts/kafka.sh start-cluster: %v\n%s", err, out)
	}
	return c
}

func (c *kafkaCluster) addr(node int) string { return fmt.Sprintf("127.0.0.1:9%d92", node) }

// brokers is every node's address: a client bootstrapped through them
// all still starts while one is down.
func (c *kafkaCluster) brokers() string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = c.addr(n)
	}
	return strings.Join(addrs, ",")
}

func (c *kafkaCluster) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.script, args...).CombinedOutput()
	return string(out), err
}

// restart starts the nodes that are not running and waits until each has
// logged that it started.
func (c *kafkaCluster) restart() error {
	if out, err := c.run("start-cluster"); err != nil {
		return fmt.Errorf("scripts/kafka.sh start-cluster: %v: %s", err, out)
	}
	return nil
}

// request sends one admin request through a client of its own (closed
// after it: the soak's goroutine check runs at the end), to a broker, not
// to a cache: a metadata cache refreshed every few seconds would miss the
// topics just made.
func (c *kafkaCluster) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.brokers(), ",")...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return cl.Request(ctx, req)
}

// quorumLeader asks the cluster (DescribeQuorum, which a broker forwards
// to the active controller) which node leads the KRaft controller quorum.
func (c *kafkaCluster) quorumLeader(ctx context.Context) (int, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	topic := kmsg.NewDescribeQuorumRequestTopic()
	topic.Topic = "__cluster_metadata"
	part := kmsg.NewDescribeQuorumRequestTopicPartition()
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	r, err := c.request(ctx, req)
	if err != nil {
		return 0, err
	}
	resp := r.(*kmsg.DescribeQuorumResponse)
	if err := kerrOf(resp.ErrorCode); err != nil {
		return 0, err
	}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if err := kerrOf(p.ErrorCode); err != nil {
				return 0, err
			}
			if p.LeaderID >= 0 {
				return int(p.LeaderID), nil
			}
		}
	}
	return 0, errors.New("DescribeQuorum named no leader")
}

func kerrOf(code int16) error {
	if code == 0 {
		return nil
	}
	return kafkago.Error(code)
}

// topics is the run's topics (names starting with prefix), as a broker
// reports them.
func (c *kafkaCluster) topics(ctx context.Context, prefix string) ([]kmsg.MetadataResponseTopic, error) {
	r, err := c.request(ctx, kmsg.NewPtrMetadataRequest()) // no topics named: all of them
	if err != nil {
		return nil, err
	}
	var out []kmsg.MetadataResponseTopic
	for _, tp := range r.(*kmsg.MetadataResponse).Topics {
		if tp.Topic != nil && strings.HasPrefix(*tp.Topic, prefix) {
			out = append(out, tp)
		}
	}
	return out, nil
}

// ledBy counts the partitions of the run's topics whose leader is node.
func (c *kafkaCluster) ledBy(ctx context.Context, prefix string, node int) (int, error) {
	tps, err := c.topics(ctx, prefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, tp := range tps {
		for _, p := range tp.Partitions {
			if int(p.Leader) == node {
				n++
			}
		}
	}
	return n, nil
}

// checkTopics fails unless the run has want topics, each partition with
// clusterReplicas replicas, all in sync, and min.insync.replicas
// clusterMinISR: with the producers' acks=all, a record is acknowledged
// only once two brokers hold it, so losing one loses nothing.
func (c *kafkaCluster) checkTopics(ctx context.Context, prefix string, want int) error {
	tps, err := c.topics(ctx, prefix)
	if err != nil {
		return err
	}
	if len(tps) != want {
		return fmt.Errorf("%d topics named %s* on the cluster; want %d", len(tps), prefix, want)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, tp := range tps {
		if err := kerrOf(tp.ErrorCode); err != nil || len(tp.Partitions) == 0 {
			return fmt.Errorf("%s: %d partitions, %v", *tp.Topic, len(tp.Partitions), err)
		}
		for _, p := range tp.Partitions {
			if len(p.Replicas) != clusterReplicas || len(p.ISR) != clusterReplicas {
				return fmt.Errorf("%s/%d: replicas %v, in sync %v; want %d", *tp.Topic, p.Partition, p.Replicas, p.ISR, clusterReplicas)
			}
		}
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, *tp.Topic, []string{"min.insync.replicas"}
		req.Resources = append(req.Resources, res)
	}
	r, err := c.request(ctx, req)
	if err != nil {
		return err
	}
	for _, res := range r.(*kmsg.DescribeConfigsResponse).Resources {
		if err := kerrOf(res.ErrorCode); err != nil {
			return fmt.Errorf("%s: %w", res.ResourceName, err)
		}
		if len(res.Configs) != 1 || res.Configs[0].Value == nil || *res.Configs[0].Value != strconv.Itoa(clusterMinISR) {
			return fmt.Errorf("%s: min.insync.replicas %v; want %d", res.ResourceName, res.Configs, clusterMinISR)
		}
	}
	return nil
}

// deleteTopics removes the run's topics: the cluster outlives the run.
func (c *kafkaCluster) deleteTopics(prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tps, err := c.topics(ctx, prefix)
	if err != nil || len(tps) == 0 {
		return err
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 30000
	for _, tp := range tps {
		req.TopicNames = append(req.TopicNames, *tp.Topic)
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = tp.Topic
		req.Topics = append(req.Topics, t)
	}
	r, err := c.request(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range r.(*kmsg.DeleteTopicsResponse).Topics {
		if err := kerrOf(t.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("%v: %w", t.Topic, err))
		}
	}
	return errors.Join(errs...)
}

// killBroker SIGKILLs a node that does not lead the controller quorum
// (that is the other fault), waits, and starts it again.
func (c *kafkaCluster) killBroker(prefix string, down time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader, err := c.quorumLeader(ctx)
	if err != nil {
		return "", fmt.Errorf("finding the quorum leader: %w", err)
	}
	victim := c.nodes[0]
	if victim == leader {
		victim = c.nodes[1]
	}
	led, _ := c.ledBy(ctx, prefix, victim)
	if out, err := c.run("kill-node", strconv.Itoa(victim)); err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	killed := time.Now()
	time.Sleep(down)
	if err := c.restart(); err != nil {
		return "", err
	}
	return fmt.Sprintf("broker %d of 3 (not the quorum leader, %d; leader of %d of the run's partitions) SIGKILLed, started again after %v, ready %v after the kill",
		victim, leader, led, down, time.Since(killed).Round(time.Millisecond)), nil
}

// stopQuorumLeader stops the node leading the KRaft controller quorum
// (SIGTERM: a controlled shutdown; the node is a broker too), waits, and
// starts it again. The other two elect a new leader.
func (c *kafkaCluster) stopQuorumLeader(prefix string, down time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader, err := c.quorumLeader(ctx)
	if err != nil {
		return "", fmt.Errorf("finding the quorum leader: %w", err)
	}
	led, _ := c.ledBy(ctx, prefix, leader)
	start := time.Now()
	if out, err := c.run("stop-node", strconv.Itoa(leader)); err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	stopped := time.Since(start)
	// The new leader, once the other two have elected one.
	next := -1
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		qctx, qcancel := context.WithTimeout(context.Background(), 3*time.Second)
		n, err := c.quorumLeader(qctx)
		qcancel()
		if err == nil && n != leader {
			next = n
			break
		}
	}
	elected := time.Since(start)
	time.Sleep(down)
	if err := c.restart(); err != nil {
		return "", err
	}
	if next < 0 {
		return "", fmt.Errorf("no new quorum leader within 30s of stopping node %d", leader)
	}
	return fmt.Sprintf("controller quorum leader (node %d, leader of %d of the run's partitions) stopped (SIGTERM, controlled shutdown, %v), node %d leading the quorum %v after the stop began; started again after %v more",
		leader, led, stopped.Round(time.Millisecond), next, elected.Round(time.Millisecond), down), nil
}
