package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// routedApp starts a routed module with one producer route on topic and
// returns its producer and provisioner; the app stops when the test ends.
func routedApp(t *testing.T, topic string, resolve routing.Resolver, rc kafka.RoutedConfig) (*kafka.Producer, *migrate.Runner) {
	t.Helper()
	var out struct {
		fx.In
		Producer  *kafka.Producer `name:"orders"`
		Provision *migrate.Runner `name:"events"`
	}
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Routed(resolve, rc), modules.RequiredIsolation(tenancy.Dedicated),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared(topic)})),
		fx.Populate(&out))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return out.Producer, out.Provision
}

// records counts the records in partition 0 of topic on broker.
func records(t *testing.T, broker, topic string) int64 {
	t.Helper()
	conn, err := kafkago.DialLeader(context.Background(), "tcp", broker, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	last, err := conn.ReadLastOffset()
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// TestRoutedSharedClusterRefused: tenant B resolving to tenant A's
// cluster (spelled another way, with other credentials) is refused before
// anything is produced or provisioned: every route of a routed module
// uses the same topic names, so B's records would be handled as A's.
func TestRoutedSharedClusterRefused(t *testing.T) {
	s := newSpace(t)
	broker, topic := s.broker, s.name("orders")
	creds := map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: broker},
		tenancytest.TenantB: {Endpoint: " " + broker + "," + broker, User: "b", Secret: "other"},
	}
	prod, prov := routedApp(t, topic, func(_ context.Context, id tenancy.ID) (routing.Credentials, error) { return creds[id], nil }, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4}})
	ctx := context.Background()
	if err := prov.Provision(ctx, tenancytest.TenantA); err != nil {
		t.Fatal(err)
	}
	if err := prod.Produce(tenancy.WithTenant(ctx, tenancytest.TenantA), kafka.Message{Value: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	refused := func(op string, err error) {
		t.Helper()
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared || te.Module != "events" || te.Backend != "kafka" {
			t.Fatalf("B's %s on A's cluster: %v", op, err)
		}
	}
	refused("provision", prov.Provision(ctx, tenancytest.TenantB))
	err := prod.Produce(tenancy.WithTenant(ctx, tenancytest.TenantB), kafka.Message{Value: []byte("b")})
	refused("produce", err)
	var te *tenancy.Error
	if errors.As(err, &te); te.Route != "orders" {
		t.Errorf("refusal names route %q", te.Route)
	}
	if n := records(t, broker, topic); n != 1 {
		t.Fatalf("%d records on A's topic, want only A's", n)
	}
}

// TestRoutedBudgetIsAHardLimit: with at most 2 routed clients, twelve
// tenants, each on its own kfake cluster, producing at once never have
// more than two clusters connected. Counted on the client side, by a
// dialer wrapper (RoutedConfig.Dial): a cluster is connected from its first
// dialed connection to the close of its last one, and a client's close
// returns only once its connections are closed. Each cluster's listener
// also counts server side, where a close is seen a moment late: that
// count is logged, not asserted.
func TestRoutedBudgetIsAHardLimit(t *testing.T) {
	const tenants = 12
	var clientSide, serverSide clusterCount
	brokers := map[tenancy.ID]string{}
	ids := make([]tenancy.ID, tenants)
	for i := range ids {
		ids[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+100))
		key := fmt.Sprint(i)
		listen := func(network, address string) (net.Listener, error) {
			ln, err := net.Listen(network, address)
			if err != nil {
				return nil, err
			}
			return &countingListener{Listener: ln, count: &serverSide, key: key}, nil
		}
		// Each cluster its own id: every kfake cluster reports "kfake"
		// otherwise, and routed clients claim the id their brokers report.
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1), kfake.ListenFn(listen), kfake.ClusterID("budget-"+key))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		brokers[ids[i]] = c.ListenAddrs()[0]
	}
	d := &net.Dialer{}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		clientSide.opened(addr)
		return &countedConn{Conn: nc, count: &clientSide, key: addr}, nil
	}
	prod, prov := routedApp(t, "orders", func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: brokers[id]}, nil
	}, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 2}, Dial: dial})
	ctx := context.Background()
	for _, id := range ids {
		if err := prov.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for i := range 3 {
				if err := prod.Produce(tenancy.WithTenant(ctx, id), kafka.Message{Value: []byte(fmt.Sprint(i))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	top, server := clientSide.top(), serverSide.top() // before this test's own reads connect
	for _, id := range ids {
		if n := records(t, brokers[id], "orders"); n != 3 {
			t.Errorf("tenant %s: %d records", id, n)
		}
	}
	t.Logf("peak clusters connected at once: %d dialed by the clients, %d seen by the brokers", top, server)
	if top > 2 || top == 0 {
		t.Errorf("%d clusters connected at once with at most 2 clients", top)
	}
}

// clusterCount tracks how many clusters have a connection open at once.
type clusterCount struct {
	mu        sync.Mutex
	open      map[string]int
	connected int
	peak      int
}

func (c *clusterCount) opened(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		c.open = map[string]int{}
	}
	if c.open[key]++; c.open[key] == 1 {
		c.connected++
		c.peak = max(c.peak, c.connected)
	}
}

func (c *clusterCount) closed(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[key]--; c.open[key] == 0 {
		c.connected--
	}
}

func (c *clusterCount) top() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peak
}

type countingListener struct {
	net.Listener
	count *clusterCount
	key   string
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.count.opened(l.key)
	return &countedConn{Conn: c, count: l.count, key: l.key}, nil
}

type countedConn struct {
	net.Conn
	count *clusterCount
	key   string
	once  sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.count.closed(c.key) })
	return c.Conn.Close()
}

// TestRoutedClusterSpellings: the broker named by another host name (or
// an IPv4-mapped address) is tenant A's cluster all the same: the name
// rules catch one spelling, the cluster id the broker reports the other,
// and each tenant is refused before anything is produced. The second
// cluster, a cluster of its own, serves its tenant.
func TestRoutedClusterSpellings(t *testing.T) {
	s := newSpace(t)
	broker, topic := s.broker, s.name("orders")
	second := testsvc.KafkaSecondBroker(t)
	s.alsoOn(t, second)
	host, port, err := net.SplitHostPort(broker)
	if err != nil || net.ParseIP(host).To4() == nil {
		t.Fatalf("the test broker %q is not an IPv4 address", broker)
	}
	tC, tD := tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c"), tenancy.MustParseID("0d0d0d0d-0000-4000-8000-00000000000d")
	creds := map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: {Endpoint: broker},
		tenancytest.TenantB: {Endpoint: "localhost:" + port},             // only the cluster id tells
		tC:                  {Endpoint: "[::ffff:" + host + "]:" + port}, // the name rules tell
		tD:                  {Endpoint: second},
	}
	prod, prov := routedApp(t, topic, func(_ context.Context, id tenancy.ID) (routing.Credentials, error) { return creds[id], nil }, kafka.RoutedConfig{Limits: routing.Limits{MaxClients: 4}})
	ctx := context.Background()
	for _, id := range []tenancy.ID{tenancytest.TenantA, tD} {
		if err := prov.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := prod.Produce(tenancy.WithTenant(ctx, id), kafka.Message{Value: []byte("a")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []tenancy.ID{tenancytest.TenantB, tC} {
		err := prod.Produce(tenancy.WithTenant(ctx, id), kafka.Message{Value: []byte("b")})
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared {
			t.Fatalf("%s (%s) on A's cluster: %v", id, creds[id].Endpoint, err)
		}
		if id == tenancytest.TenantB && !strings.Contains(te.Detail, "its server reports") {
			t.Errorf("localhost was refused by name, not by the cluster id: %s", te.Detail)
		}
	}
	if n := records(t, broker, topic); n != 1 {
		t.Fatalf("%d records on A's topic, want only A's", n)
	}
}
