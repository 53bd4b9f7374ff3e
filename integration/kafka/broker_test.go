package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/internal/testsvc"
)

// space is one test's share of the real test broker (scripts/kafka.sh): its
// topics and groups all start with a prefix no other test, rerun or
// concurrent run uses, so none sees another's records, offsets or group
// members. Its topics and groups are deleted when the test ends.
type space struct {
	broker string
	prefix string
}

func newSpace(t *testing.T) *space {
	t.Helper()
	return spaceOn(t, strings.Split(testsvc.KafkaBrokers(t), ",")[0])
}

// spaceOn is a space on another broker.
func spaceOn(t *testing.T, broker string) *space {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	s := &space{broker: broker, prefix: "tw-" + hex.EncodeToString(b) + "-"}
	t.Cleanup(func() { s.clean(t) })
	return s
}

// alsoOn cleans this space's names on another broker too, for a test
// whose routes use the same names on two clusters.
func (s *space) alsoOn(t *testing.T, broker string) {
	other := &space{broker: broker, prefix: s.prefix}
	t.Cleanup(func() { other.clean(t) })
}

// name is n in this test's namespace.
func (s *space) name(n string) string { return s.prefix + n }

// admin is a client of the test broker with its own transport; close
// releases its connections (goleak checks every test).
func admin(broker string) (*kafkago.Client, func()) {
	tr := &kafkago.Transport{DialTimeout: 5 * time.Second}
	return &kafkago.Client{Addr: kafkago.TCP(broker), Transport: tr, Timeout: 10 * time.Second}, tr.CloseIdleConnections
}

// clean deletes the topics and groups of the space. It runs after the
// test's apps stopped (cleanups run last-registered first), so no member
// is left in a group. A failure is logged, not fatal: names are unique.
func (s *space) clean(t *testing.T) {
	c, closeAdmin := admin(s.broker)
	defer closeAdmin()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if groups, err := c.ListGroups(ctx, &kafkago.ListGroupsRequest{}); err == nil {
		var ids []string
		for _, g := range groups.Groups {
			if strings.HasPrefix(g.GroupID, s.prefix) {
				ids = append(ids, g.GroupID)
			}
		}
		if len(ids) > 0 {
			if _, err := c.DeleteGroups(ctx, &kafkago.DeleteGroupsRequest{GroupIDs: ids}); err != nil {
				t.Logf("deleting groups %v: %v", ids, err)
			}
		}
	}
	md, err := c.Metadata(ctx, &kafkago.MetadataRequest{})
	if err != nil {
		t.Logf("listing topics to delete: %v", err)
		return
	}
	var topics []string
	for _, tp := range md.Topics {
		if strings.HasPrefix(tp.Name, s.prefix) {
			topics = append(topics, tp.Name)
		}
	}
	if len(topics) == 0 {
		return
	}
	if _, err := c.DeleteTopics(ctx, &kafkago.DeleteTopicsRequest{Topics: topics}); err != nil {
		t.Logf("deleting topics %v: %v", topics, err)
	}
}

// createTopics creates one-partition topics on broker, as a provisioned
// route would have them.
func createTopics(t *testing.T, broker string, topics ...string) {
	t.Helper()
	c, closeAdmin := admin(broker)
	defer closeAdmin()
	req := &kafkago.CreateTopicsRequest{}
	for _, tp := range topics {
		req.Topics = append(req.Topics, kafkago.TopicConfig{Topic: tp, NumPartitions: 1, ReplicationFactor: -1})
	}
	resp, err := c.CreateTopics(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for tp, err := range resp.Errors {
		if err != nil {
			t.Fatalf("creating %s: %v", tp, err)
		}
	}
}

// gate forwards an address of its own to the test broker, and is closed
// until opened: to a client bootstrapped through it, the broker is down,
// then up. Once up, clients follow the broker's metadata to the address it
// advertises: its own, or the gate's for the gated listener (onGatedListener).
type gate struct {
	at     string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newGate(t *testing.T, target string) *gate {
	return newGateAt(t, "127.0.0.1:"+testsvc.FreePort(t), target)
}

func newGateAt(t *testing.T, at, target string) *gate {
	g := &gate{at: at, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(g.close)
	return g
}

// onGatedListener is a gate on the address the broker's gated listener
// advertises: every connection of a client bootstrapped through it goes
// through it, so closing it takes the broker away mid-run.
func onGatedListener(t *testing.T) *gate {
	listener, advertised := testsvc.KafkaGatedListener(t)
	return newGateAt(t, advertised, listener)
}

func (g *gate) addr() string { return g.at }

// open starts forwarding; t is for errors only. A fixed address may be
// another run's gate for a while: open waits for it.
func (g *gate) open(t *testing.T) {
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if ln, err = net.Listen("tcp", g.at); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Error(err)
		return
	}
	g.mu.Lock()
	if g.conns == nil { // the test ended first
		g.mu.Unlock()
		_ = ln.Close()
		return
	}
	g.ln = ln
	g.mu.Unlock()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", g.target, 5*time.Second)
			if err != nil {
				_ = in.Close()
				continue
			}
			if !g.track(in, out) {
				return
			}
			g.wg.Add(2)
			go g.pipe(in, out)
			go g.pipe(out, in)
		}
	}()
}

func (g *gate) track(cs ...net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conns == nil { // closed meanwhile
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		g.conns[c] = struct{}{}
	}
	return true
}

func (g *gate) pipe(dst, src net.Conn) {
	defer g.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

func (g *gate) close() {
	g.mu.Lock()
	if g.ln != nil {
		_ = g.ln.Close()
	}
	for c := range g.conns {
		_ = c.Close()
	}
	g.conns = nil
	g.mu.Unlock()
	g.wg.Wait()
}
