package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestShardedConsumerBacklogDoesNotDelayAnotherTenant: a sharded consumer
// is working through tenant A's backlog of 100,000 records when tenant B
// produces one: B's reader is its own (its own topic and group), so B's
// record waits for none of A's. The bound is in time: a fetch's MaxWait
// plus the broker's round trips, here allowed a second on a loaded
// machine; how many of A's records were handled meanwhile is printed, not
// bounded (A's reader runs beside B's).
func TestShardedConsumerBacklogDoesNotDelayAnotherTenant(t *testing.T) {
	const backlog, maxWait, bound = 100_000, 50 * time.Millisecond, time.Second
	s := newSpace(t)
	var (
		mu      sync.Mutex
		ofA     int
		written = -1
		wroteB  time.Time
		tookB   time.Duration
		duringB = -1
		gotB    = make(chan struct{})
		joined  = make(chan struct{})
	)
	handle := func(ctx context.Context, m kafkago.Message) error {
		id, _ := tenancy.FromContext(ctx)
		mu.Lock()
		defer mu.Unlock()
		switch id {
		case tenantA:
			ofA++
		case tenantB:
			if string(m.Value) == "b-0" {
				close(joined)
			} else if duringB < 0 {
				tookB, duringB = time.Since(wroteB), ofA-written
				close(gotB)
			}
		}
		return nil
	}
	var d deps
	topic := naming.PerTenant(s.name("orders."))
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: topic}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Group: s.name("g"), Handle: handle, Topic: topic, MaxWait: maxWait,
				WorkerConfig: shards.WorkerConfig{Tenants: tenants(tenantA, tenantB), OnError: func(error) {}}}),
		),
		fx.Populate(&d),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []tenancy.ID{tenantA, tenantB} {
		if err := d.Provision.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	raw := rawWriter(t, s.broker)
	raw.BatchSize = 5000
	begin := time.Now()
	msgs := make([]kafkago.Message, backlog)
	for i := range msgs {
		msgs[i] = kafkago.Message{Topic: s.name("orders.") + tenantA.Hex(), Value: fmt.Appendf(nil, "a-%d", i)}
	}
	if err := raw.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records of A written in %v", backlog, time.Since(begin).Round(time.Millisecond))
	startApp(t, app)
	// B's first record comes after its reader joined its group: the join
	// (a rebalance of B's group alone) is printed, not what is bounded.
	begin = time.Now()
	if err := d.Producer.Produce(tenancy.WithTenant(ctx, tenantB), kafka.Message{Value: []byte("b-0")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-joined:
		t.Logf("B's first record, written at the start, handled %v after the start returned", time.Since(begin).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("B's first record not handled within 30s of the start")
	}

	// B produces again once A's reader is well into the backlog.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := ofA
		mu.Unlock()
		if n >= 1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of A's records handled in 30s", n)
		}
	}
	mu.Lock()
	written, wroteB = ofA, time.Now()
	mu.Unlock()
	if err := d.Producer.Produce(tenancy.WithTenant(ctx, tenantB), kafka.Message{Value: []byte("b-1")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gotB:
	case <-time.After(30 * time.Second):
		t.Fatal("B's record not handled within 30s of its write")
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("B's record handled %v after its write; %d of A's records handled meanwhile (%d in all, %d still waiting)",
		tookB.Round(time.Millisecond), duringB, ofA, backlog-ofA)
	if tookB > bound {
		t.Errorf("B's record took %v behind A's backlog, want at most %v", tookB, bound)
	}
}

// TestHeaderConsumerParkedBacklogDoesNotDelayAnotherTenant: on a shared
// one-partition topic, a suspended tenant A's backlog of 100,000 records
// sits ahead of tenant B's one: B's record is handled after none of A's
// (A is parked, and past MaxHeld its records are left on the broker), in
// the time it takes to fetch past A's records, printed and bounded here at
// 10 s; the commit stays at A's first record.
func TestHeaderConsumerParkedBacklogDoesNotDelayAnotherTenant(t *testing.T) {
	const backlog, bound = 100_000, 10 * time.Second
	s := newSpace(t)
	ctx := context.Background()
	got := newReceived()
	app, p := headerConsumerApp(t, s, got)
	if err := p.Provision.ProvisionShared(ctx); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	p.Tenants.Suspend(tenantA)
	raw := rawWriter(t, s.broker)
	raw.BatchSize = 5000
	header := func(id tenancy.ID) []kafkago.Header {
		return []kafkago.Header{{Key: kafka.HeaderTenant, Value: []byte(id.String())}}
	}
	msgs := make([]kafkago.Message, backlog)
	for i := range msgs {
		msgs[i] = kafkago.Message{Topic: s.name("in"), Value: fmt.Appendf(nil, "a-%d", i), Headers: header(tenantA)}
	}
	begin := time.Now()
	if err := raw.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records of the suspended A written in %v", backlog, time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	if err := raw.WriteMessages(ctx, kafkago.Message{Topic: s.name("in"), Value: []byte("b-1"), Headers: header(tenantB)}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(bound); got.times("b-1") == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("B's record not handled within %v behind A's backlog", bound)
		}
	}
	took := time.Since(begin)
	by, _ := got.snapshot()
	t.Logf("B's record handled %v after its write, behind %d of A's records, %d of them handled", took.Round(time.Millisecond), backlog, len(by[tenantA.String()]))
	if n := len(by[tenantA.String()]); n != 0 {
		t.Errorf("%d of the suspended tenant's records were handled", n)
	}
	// Nothing is committed: A's first record is the partition's first.
	if off := committed(t, s.broker, s.name("g"), s.name("in")); off > 0 {
		t.Errorf("committed offset %d, want none: past A's first record", off)
	}
}

// TestHeaderConsumerHealthyBacklogDoesNotDelayAnotherTenant: on a shared
// one-partition topic, a healthy tenant A's backlog of 100,000 records sits
// ahead of tenant B's one. After a turn of A's records the consumer leaves
// the rest of them on the broker and reads ahead, so B's record is handled
// after at most a turn of A's (100), not after all of them. With a backlog
// of 5,000 the test waits for the rest too: A's records are read again and
// handled, each once, in order, and the partition is committed to its end
// (100,000 take some 20 s to drain on the test machine).
func TestHeaderConsumerHealthyBacklogDoesNotDelayAnotherTenant(t *testing.T) {
	t.Run("100,000", func(t *testing.T) { healthyBacklog(t, 100_000, false) })
	t.Run("5,000 drained", func(t *testing.T) { healthyBacklog(t, 5_000, true) })
}

func healthyBacklog(t *testing.T, backlog int, drain bool) {
	const turn = 100
	s := newSpace(t)
	ctx := context.Background()
	var (
		mu      sync.Mutex
		handled []string // in order
		count   = map[string]int{}
	)
	handle := func(ctx context.Context, m kafkago.Message) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, string(m.Value))
		count[string(m.Value)]++
		return nil
	}
	app := healthyHeaderConsumer(ctx, t, s, handle)
	raw := rawWriter(t, s.broker)
	raw.BatchSize = 5000
	header := func(id tenancy.ID) []kafkago.Header {
		return []kafkago.Header{{Key: kafka.HeaderTenant, Value: []byte(id.String())}}
	}
	msgs := make([]kafkago.Message, backlog, backlog+1)
	for i := range msgs {
		msgs[i] = kafkago.Message{Topic: s.name("in"), Value: fmt.Appendf(nil, "a-%06d", i), Headers: header(tenantA)}
	}
	msgs = append(msgs, kafkago.Message{Topic: s.name("in"), Value: []byte("b-1"), Headers: header(tenantB)})
	if err := raw.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	startApp(t, app)
	wait := func(what string, within time.Duration, done func() bool) time.Duration {
		t.Helper()
		for deadline := time.Now().Add(within); ; time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			ok := done()
			mu.Unlock()
			if ok {
				return time.Since(begin)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, within)
			}
		}
	}
	tookB := wait("B's record handled", 20*time.Second, func() bool { return count["b-1"] > 0 })
	mu.Lock()
	before := slices.Index(handled, "b-1")
	mu.Unlock()
	t.Logf("B's record, behind %d of A's, handled %v after the start, after %d of A's", backlog, tookB.Round(time.Millisecond), before)
	if before > turn {
		t.Errorf("B's record handled after %d of A's records, want at most a turn (%d)", before, turn)
	}
	if !drain {
		return
	}
	took := wait("every record handled", 60*time.Second, func() bool { return len(count) == len(msgs) })
	t.Logf("all %d records handled %v after the start", len(msgs), took.Round(time.Millisecond))
	mu.Lock()
	defer mu.Unlock()
	prev := ""
	for _, v := range handled {
		if count[v] != 1 {
			t.Fatalf("%s handled %d times, want once", v, count[v])
		}
		if v != "b-1" {
			if v < prev {
				t.Fatalf("A's records out of order: %s after %s", v, prev)
			}
			prev = v
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		off := committed(t, s.broker, s.name("g"), s.name("in"))
		if off == int64(len(msgs)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offset %d, want %d", off, len(msgs))
		}
	}
}

// TestHeaderConsumerSteadyTenantTakesNoTurns: a tenant whose records come
// one at a time, every few milliseconds, faster than a fetch's MaxWait but
// no faster than the consumer handles them, has no backlog: however many
// it writes in a row, none waits for a turn (each is the last of its
// partition when fetched), so each is handled within a bound of its write
// (500 ms asserted here, on a loaded machine).
func TestHeaderConsumerSteadyTenantTakesNoTurns(t *testing.T) {
	const n, bound = 300, 500 * time.Millisecond
	s := newSpace(t)
	ctx := context.Background()
	var (
		mu      sync.Mutex
		written = map[string]time.Time{}
		worst   time.Duration
		count   int
	)
	handle := func(ctx context.Context, m kafkago.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if at, ok := written[string(m.Value)]; ok {
			worst = max(worst, time.Since(at))
		}
		count++
		return nil
	}
	app := healthyHeaderConsumer(ctx, t, s, handle)
	startApp(t, app)
	raw := rawWriter(t, s.broker)
	for i := range n {
		v := fmt.Sprintf("a-%d", i)
		mu.Lock()
		written[v] = time.Now()
		mu.Unlock()
		if err := raw.WriteMessages(ctx, kafkago.Message{Topic: s.name("in"), Value: []byte(v),
			Headers: []kafkago.Header{{Key: kafka.HeaderTenant, Value: []byte(tenantA.String())}}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		c := count
		mu.Unlock()
		if c == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records handled within 20s", c, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d records of one tenant, written one at a time: the slowest handled %v after its write", n, worst.Round(time.Millisecond))
	if worst > bound {
		t.Errorf("a record of a tenant without a backlog waited %v, want at most %v", worst, bound)
	}
}

// healthyHeaderConsumer is an app of one header-bound consumer over a
// shared topic of one partition in s, handled by handle, its topic
// provisioned and the app not started.
func healthyHeaderConsumer(ctx context.Context, t *testing.T, s *space, handle func(context.Context, kafkago.Message) error) *fx.App {
	t.Helper()
	var d struct {
		fx.In
		Provision *migrate.Runner `name:"events"`
	}
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker),
			kafka.ProducerRoute("in", kafka.ProducerConfig{Topic: naming.Shared(s.name("in")), Partitions: 1}),
			kafka.Consumer("in-c", kafka.ConsumerConfig{Group: s.name("g"), Handle: handle, Topic: naming.Shared(s.name("in")),
				TenantFromHeaders: true, DeadLetter: func(context.Context, kafkago.Message, error) error { return nil },
				MaxWait: 50 * time.Millisecond, WorkerConfig: shards.WorkerConfig{OnError: func(error) {}}}),
		),
		fx.Populate(&d),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := d.Provision.ProvisionShared(ctx); err != nil {
		t.Fatal(err)
	}
	return app
}
