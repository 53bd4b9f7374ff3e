package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// sent counts what the relay handed to Kafka successfully, per payload.
type sent struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *sent) wrap(next func() outbox.Destination) outbox.Destination {
	return outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error {
		if err := next().Deliver(ctx, m); err != nil {
			return err
		}
		s.mu.Lock()
		s.n[string(m.Payload)]++
		s.mu.Unlock()
		return nil
	})
}

// End to end: outbox rows of three tenants in PostgreSQL → a relay →
// per-tenant topics (the Kafka producer as destination) → a sharded
// consumer. Each message is handled under its own tenant, exactly as many
// times as the relay sent it: with the tenant-global relay over a
// tenant-global outbox, and the sharded relay over a tenant-aware one.
func TestOutboxRelayToKafkaEndToEnd(t *testing.T) {
	url := testsvc.PostgresURL(t)
	for _, sharded := range []bool{false, true} {
		t.Run(map[bool]string{false: "tenant-global", true: "sharded"}[sharded], func(t *testing.T) {
			endToEnd(t, url, sharded)
		})
	}
}

func endToEnd(t *testing.T, url string, sharded bool) {
	s := newSpace(t)
	topics := s.name(map[bool]string{false: "e2e.", true: "e2e-sharded."}[sharded])
	_, table := outboxTable(t, url, "e2e_outbox_")

	got := newReceived()
	counted := &sent{n: map[string]int{}}
	var d deps
	var box *postgres.Outbox
	var pg *postgres.Client
	// The producer exists once fx.New has run; the relay only delivers
	// after OnStart, by which time d is populated.
	dest := counted.wrap(func() outbox.Destination { return d.Producer })
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker), modules.RequiredIsolation(tenancy.Namespace),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(topics)}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("billing"), Handle: got.handle,
				WorkerConfig: shards.WorkerConfig{Tenants: tenants(tenantA, tenantB, tenantC)}, Topic: naming.PerTenant(topics)}),
		),
		postgres.Module("db", append([]postgres.Option{postgres.Connect(url)}, relayWiring(table, dest, sharded)...)...),
		fx.Populate(&d),
		fx.Invoke(fx.Annotate(func(o *postgres.Outbox, c *postgres.Client) { box, pg = o, c },
			fx.ParamTags(`name:"outbox"`, `name:"db"`))),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []tenancy.ID{tenantA, tenantB, tenantC} {
		if err := d.Provision.Provision(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if err := pg.Provision(context.Background(), tenantA); err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, id := range []tenancy.ID{tenantA, tenantB, tenantC} {
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
	startApp(t, app)
	got.waitFor(t, values...)
	time.Sleep(200 * time.Millisecond) // let any duplicate arrive before counting
	_, handled := got.snapshot()
	counted.mu.Lock()
	defer counted.mu.Unlock()
	for _, v := range values {
		if handled[v] != counted.n[v] {
			t.Errorf("%s: relayed %d times, handled %d times", v, counted.n[v], handled[v])
		}
		if s := got.scopeOf(v); s != v[:36] {
			t.Errorf("%s handled under %s", v, s)
		}
	}
}

func relayWiring(table string, dest outbox.Destination, sharded bool) []postgres.Option {
	rc := postgres.RelayConfig{Destination: dest, BatchSize: 8, Idle: 20 * time.Millisecond, WorkerConfig: shards.WorkerConfig{MaxBackoff: 500 * time.Millisecond, Backoff: 20 * time.Millisecond}}
	if !sharded {
		return []postgres.Option{
			postgres.OutboxRoute("outbox", postgres.OutboxConfig{Table: naming.Shared(table)}),
			postgres.Relay("outbox", rc),
		}
	}
	rc.Tenants = func(context.Context) ([]tenancy.ID, error) { return []tenancy.ID{tenantA, tenantB, tenantC}, nil }
	return []postgres.Option{
		postgres.OutboxRoute("outbox", postgres.OutboxConfig{TenantAware: true, Table: naming.Shared(table)}),
		postgres.Relay("outbox", rc),
	}
}

// outboxTable names a fresh outbox table for one test and drops it after,
// with a superuser connection for the test's own checks.
func outboxTable(t *testing.T, url, prefix string) (*pgx.Conn, string) {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	table := prefix + hex.EncodeToString(b)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+table)
		conn.Close(context.Background())
	})
	return conn, table
}
