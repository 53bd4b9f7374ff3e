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

// quorumLeader asks the cluster (DescribeQuorum, which a broker forwards
// to the active controller) which node leads the KRaft controller quorum.
func (c *kafkaCluster) quorumLeader(ctx context.Context) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.brokers(), ",")...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	topic := kmsg.NewDescribeQuorumRequestTopic()
	topic.Topic = "__cluster_metadata"
	part := kmsg.NewDescribeQuorumRequestTopicPartition()
	part.Partition = 0
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
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

// ledBy counts the partitions of the run's topics (names starting with
// prefix) whose leader is node.
func (c *kafkaCluster) ledBy(ctx context.Context, prefix string, node int) (int, error) {
	md, err := c.metadata(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, tp := range md.Topics {
		if !strings.HasPrefix(tp.Name, prefix) {
			continue
		}
		for _, p := range tp.Partitions {
			if p.Leader.ID == node {
				n++
			}
		}
	}
	return n, nil
}

func (c *kafkaCluster) admin() *kafkago.Client {
	return &kafkago.Client{Addr: kafkago.TCP(strings.Split(c.brokers(), ",")...), Timeout: 30 * time.Second}
}

func (c *kafkaCluster) metadata(ctx context.Context) (*kafkago.MetadataResponse, error) {
	return c.admin().Metadata(ctx, &kafkago.MetadataRequest{})
}

// checkTopics fails unless every topic of the run has clusterReplicas
// replicas per partition, all in sync, and min.insync.replicas
// clusterMinISR: with the producers' acks=all, a record is acknowledged
// only once two brokers hold it, so losing one loses nothing.
func (c *kafkaCluster) checkTopics(ctx context.Context, prefix string) (int, error) {
	md, err := c.metadata(ctx)
	if err != nil {
		return 0, err
	}
	var names []string
	for _, tp := range md.Topics {
		if !strings.HasPrefix(tp.Name, prefix) {
			continue
		}
		names = append(names, tp.Name)
		for _, p := range tp.Partitions {
			if len(p.Replicas) != clusterReplicas || len(p.Isr) != clusterReplicas {
				return 0, fmt.Errorf("%s/%d: %d replicas, %d in sync; want %d", tp.Name, p.ID, len(p.Replicas), len(p.Isr), clusterReplicas)
			}
		}
	}
	if len(names) == 0 {
		return 0, fmt.Errorf("no topic named %s* on the cluster", prefix)
	}
	var res []kafkago.DescribeConfigRequestResource
	for _, n := range names {
		res = append(res, kafkago.DescribeConfigRequestResource{ResourceType: kafkago.ResourceTypeTopic, ResourceName: n,
			ConfigNames: []string{"min.insync.replicas"}})
	}
	cfg, err := c.admin().DescribeConfigs(ctx, &kafkago.DescribeConfigsRequest{Resources: res})
	if err != nil {
		return 0, err
	}
	for _, r := range cfg.Resources {
		if r.Error != nil {
			return 0, fmt.Errorf("%s: %w", r.ResourceName, r.Error)
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == "min.insync.replicas" && e.ConfigValue != strconv.Itoa(clusterMinISR) {
				return 0, fmt.Errorf("%s: min.insync.replicas=%s; want %d", r.ResourceName, e.ConfigValue, clusterMinISR)
			}
		}
	}
	return len(names), nil
}

// deleteTopics removes the run's topics: the cluster outlives the run.
func (c *kafkaCluster) deleteTopics(prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	md, err := c.metadata(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, tp := range md.Topics {
		if strings.HasPrefix(tp.Name, prefix) {
			names = append(names, tp.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	resp, err := c.admin().DeleteTopics(ctx, &kafkago.DeleteTopicsRequest{Topics: names})
	if err != nil {
		return err
	}
	var errs []error
	for name, e := range resp.Errors {
		if e != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, e))
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
