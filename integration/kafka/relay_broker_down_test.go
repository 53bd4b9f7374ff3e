package kafka_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

const (
	downIdle       = 25 * time.Millisecond
	downMaxBackoff = 250 * time.Millisecond
)

// attempt is one Deliver call the relay made.
type attempt struct {
	start, end time.Time
	err        error
}

// attempts records every delivery attempt, per relay pass.
type attempts struct {
	mu     sync.Mutex
	byPass map[string][]attempt
}

// wrap records each attempt under the row's tenant: the backoff is per
// tenant, in the sharded relay (a pass per tenant) and in the
// tenant-global one (a failing tenant is parked) alike.
func (a *attempts) wrap(next func() outbox.Destination) outbox.Destination {
	return outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error {
		start := time.Now()
		err := next().Deliver(ctx, m)
		pass := m.Tenant.String()
		a.mu.Lock()
		a.byPass[pass] = append(a.byPass[pass], attempt{start, time.Now(), err})
		a.mu.Unlock()
		return err
	})
}

// The broker is gone at relay start: the relay starts with no broker, its passes fail and back
// off, and once the broker is up (and the topics provisioned) every row of
// three tenants reaches its own tenant's topic and is marked delivered.
// The app reaches the test broker through a gate, closed at first.
func TestRelayStartsWithBrokerDown(t *testing.T) {
	url := testsvc.PostgresURL(t)
	for _, sharded := range []bool{false, true} {
		t.Run(map[bool]string{false: "tenant-global", true: "sharded"}[sharded], func(t *testing.T) {
			relayBrokerDown(t, url, sharded)
		})
	}
}

func relayBrokerDown(t *testing.T, url string, sharded bool) {
	s := newSpace(t)
	g := newGate(t, s.broker)
	conn, table := outboxTable(t, url, "down_outbox_")

	ids := []tenancy.ID{tenantA, tenantB, tenantC}
	tried := &attempts{byPass: map[string][]attempt{}}
	var d deps
	var box *postgres.Outbox
	var pg *postgres.Client
	dest := tried.wrap(func() outbox.Destination { return d.Producer })
	rc := postgres.RelayConfig{Destination: dest, BatchSize: 8, Idle: downIdle, WorkerConfig: shards.WorkerConfig{MaxBackoff: downMaxBackoff, Logger: slog.New(slog.DiscardHandler), Backoff: downIdle}}
	relay := postgres.Relay("outbox", rc)
	if sharded {
		rc.Tenants = func(context.Context) ([]tenancy.ID, error) { return ids, nil }
		relay = postgres.Relay("outbox", rc)
	}
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(g.addr()), modules.RequiredIsolation(tenancy.Namespace),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("down."))}),
		),
		postgres.Module("db", postgres.Connect(url),
			postgres.OutboxRoute("outbox", postgres.OutboxConfig{TenantAware: sharded, Table: naming.Shared(table)}), relay),
		fx.Populate(&d),
		fx.Invoke(fx.Annotate(func(o *postgres.Outbox, c *postgres.Client) { box, pg = o, c },
			fx.ParamTags(`name:"outbox"`, `name:"db"`))),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Provision(context.Background(), tenantA); err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, id := range ids {
		var msgs []outbox.Message
		for i := range 4 {
			v := fmt.Sprintf("%s/%d", id, i)
			values = append(values, v)
			msgs = append(msgs, outbox.Message{Topic: "orders", Key: []byte(v), Payload: []byte(v)})
		}
		if err := box.Write(tenancy.WithTenant(context.Background(), id), msgs...); err != nil {
			t.Fatal(err)
		}
	}

	// Nothing listens on the port: starting must neither fail nor hang.
	begin := time.Now()
	startApp(t, app)
	if took := time.Since(begin); took > 2*time.Second {
		t.Fatalf("start took %v with the broker down", took)
	}
	time.Sleep(1500 * time.Millisecond)

	g.open(t)
	up := time.Now()
	for _, id := range ids {
		if err := d.Provision.Provision(context.Background(), id); err != nil {
			t.Fatalf("provisioning with the broker back: %v", err)
		}
	}

	waitDelivered(t, conn, table, len(values))
	t.Logf("all delivered %v after the broker came up", time.Since(up).Round(time.Millisecond))
	requireBackedOff(t, tried)

	// Every row is on its own tenant's topic, at least once, and nothing
	// else is there.
	seen := map[string]int{}
	for _, id := range ids {
		topic, err := d.Producer.TopicFor(tenancy.WithTenant(context.Background(), id))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range readTopic(t, s.broker, topic) {
			v := string(m.Value)
			seen[v]++
			if owner, _, _ := strings.Cut(v, "/"); owner != id.String() {
				t.Errorf("%s found on %s's topic", v, id)
			}
			if h := header(m, kafka.HeaderTenant); h != id.String() {
				t.Errorf("%s on %s's topic carries tenant header %q", v, id, h)
			}
		}
	}
	for _, v := range values {
		if seen[v] == 0 {
			t.Errorf("%s on no topic", v)
		}
	}
}

// waitDelivered waits until the outbox holds n rows, all marked delivered.
func waitDelivered(t *testing.T, conn *pgx.Conn, table string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var total, pending int
		err := conn.QueryRow(context.Background(),
			"SELECT count(*), count(*) FILTER (WHERE delivered_at IS NULL) FROM "+table).Scan(&total, &pending)
		if err != nil {
			t.Fatal(err)
		}
		if total != n {
			t.Fatalf("outbox holds %d rows, want %d", total, n)
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d rows still undelivered", pending, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requireBackedOff checks that every tenant's rows failed while the broker
// was down and that, over the tenant's leading run of failures, the relay
// waited at least the doubling backoff between its attempts (timers never
// fire early).
func requireBackedOff(t *testing.T, tried *attempts) {
	t.Helper()
	tried.mu.Lock()
	defer tried.mu.Unlock()
	if want := 3; len(tried.byPass) != want {
		t.Fatalf("attempts from %d passes, want %d", len(tried.byPass), want)
	}
	for pass, as := range tried.byPass {
		failures := 0
		for k, a := range as {
			if a.err == nil {
				break
			}
			failures++
			if k+1 < len(as) {
				wait := min(downIdle<<k, downMaxBackoff)
				if gap := as[k+1].start.Sub(a.end); gap < wait {
					t.Errorf("pass %s: retried %v after failure %d, backoff is %v", pass, gap, k+1, wait)
				}
			}
		}
		if failures == 0 {
			t.Errorf("pass %s never failed with the broker down", pass)
		}
		t.Logf("pass %s: %d failed attempts before the first delivery", pass, failures)
	}
}

// readTopic returns every record of partition 0 of topic (topics are
// provisioned with one partition).
func readTopic(t *testing.T, broker, topic string) []kafkago.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := kafkago.DialLeader(ctx, "tcp", broker, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if parts, err := conn.ReadPartitions(topic); err != nil || len(parts) != 1 {
		t.Fatalf("%s: partitions %v %v", topic, parts, err)
	}
	first, last, err := conn.ReadOffsets()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Seek(first, kafkago.SeekAbsolute); err != nil {
		t.Fatal(err)
	}
	var out []kafkago.Message
	for next := first; next < last; {
		batch := conn.ReadBatch(1, 1<<20)
		for {
			m, err := batch.ReadMessage()
			if err != nil {
				break
			}
			out = append(out, m)
			next = m.Offset + 1
		}
		if err := batch.Close(); err != nil {
			t.Fatalf("%s: reading: %v", topic, err)
		}
	}
	return out
}

func header(m kafkago.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// A Provision that failed with the broker down must not leave a cached
// failure behind: the next one, once the broker is up (its gate opened),
// creates the topics (not only after the transport's metadata TTL).
func TestProvisionRightAfterBrokerReturns(t *testing.T) {
	s := newSpace(t)
	g := newGate(t, s.broker)
	var d deps
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(g.addr()), kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(s.name("back."))})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	ctx := context.Background()
	if err := d.Provision.Provision(ctx, tenantA); err == nil {
		t.Fatal("provisioned with no broker")
	}
	g.open(t)
	if err := d.Provision.Provision(ctx, tenantA); err != nil {
		t.Fatalf("provisioning with the broker back: %v", err)
	}
	if err := d.Producer.Produce(tenancy.WithTenant(ctx, tenantA), kafka.Message{Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
}
