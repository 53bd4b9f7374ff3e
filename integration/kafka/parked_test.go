package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestHeaderConsumerParksASuspendedTenant: on a one-partition topic whose
// records carry their tenant in a header, a suspended tenant's records at
// the head leave other tenants' records behind them handled within twice
// their usual latency; the suspended tenant's records are handled once it
// is resumed, in their order, none lost. The handler forwards each record
// through a producer route of the module, so the refusal is the
// lifecycle's own tenant_suspended (the kit's fairness check,
// tenancytest.Fair). While the tenant is parked, the
// partition's committed offset stays at its first record: a consumer that
// takes over handles it (and, again, what came after it).
func TestHeaderConsumerParksASuspendedTenant(t *testing.T) {
	s := newSpace(t)
	got := newReceived()
	app, p := headerConsumerApp(t, s, got)
	ctx := context.Background()
	if err := p.Provision.ProvisionShared(ctx); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)

	round := 0
	produceB := func(_ context.Context, n int) ([]string, error) {
		round++
		var vs []string
		for i := range n {
			v := fmt.Sprintf("b%d-%d", round, i)
			if err := p.Orders.Produce(tenancy.WithTenant(ctx, tenantB), kafka.Message{Value: []byte(v)}); err != nil {
				return nil, err
			}
			vs = append(vs, v)
		}
		return vs, nil
	}
	const n, rounds = 10, 5
	var parked []string
	tenancytest.Fair(t, tenancytest.Worker{
		N: n, Rounds: rounds, Enqueue: produceB,
		// Suspended first: the producer route would refuse A's records,
		// so a raw writer puts them on the topic.
		Park: func(ctx context.Context) ([]string, error) {
			p.Tenants.Suspend(tenantA)
			raw := rawWriter(t, s.broker)
			for i := range 5 {
				v := fmt.Sprintf("a-%d", i)
				if err := raw.WriteMessages(ctx, kafkago.Message{Topic: s.name("in"), Value: []byte(v),
					Headers: []kafkago.Header{{Key: kafka.HeaderTenant, Value: []byte(tenantA.String())}}}); err != nil {
					return nil, err
				}
				parked = append(parked, v)
			}
			return parked, nil
		},
		// The commit waits at the parked tenant's first record, after the
		// settling round and the usual ones.
		WhileParked: func(tb testing.TB) {
			if off := committed(t, s.broker, s.name("g"), s.name("in")); off != (1+rounds)*n {
				tb.Errorf("committed offset %d, want %d: the parked tenant's first record", off, (1+rounds)*n)
			}
		},
		Restore:   func(context.Context) error { p.Tenants.Resume(tenantA); return nil },
		Delivered: got.times,
	})
	if by, _ := got.snapshot(); !slices.Equal(by[tenantA.String()], parked) {
		t.Errorf("the parked tenant's records in order %v, want %v", by[tenantA.String()], parked)
	}
}

// committed reads group's committed offset of topic's partition 0.
func committed(t *testing.T, broker, group, topic string) int64 {
	t.Helper()
	c, done := admin(broker)
	defer done()
	res, err := c.OffsetFetch(context.Background(), &kafkago.OffsetFetchRequest{GroupID: group,
		Topics: map[string][]int{topic: {0}}})
	if err != nil {
		t.Fatal(err)
	}
	parts := res.Topics[topic]
	if len(parts) == 0 {
		t.Fatal("no committed offset")
	}
	if parts[0].Error != nil {
		t.Fatal(parts[0].Error)
	}
	return parts[0].CommittedOffset
}

// headerDeps are a header-bound consumer app's routes and lifecycle.
type headerDeps struct {
	fx.In
	Orders    *kafka.Producer `name:"in"`
	Fwd       *kafka.Producer `name:"fwd"`
	Provision *migrate.Runner `name:"events"`
	Tenants   *modules.Tenants
}

// headerConsumerApp is a TenantFromHeaders consumer on s's one-partition
// topic "in", whose handler forwards each record through the producer
// route "fwd" (refused for a suspended tenant) and records it in got.
func headerConsumerApp(t *testing.T, s *space, got *received, tune ...func(*kafka.ConsumerConfig)) (*fx.App, *headerDeps) {
	t.Helper()
	p := &headerDeps{}
	handle := func(ctx context.Context, m kafkago.Message) error {
		if err := p.Fwd.Produce(ctx, kafka.Message{Value: m.Value}); err != nil {
			return err
		}
		return got.handle(ctx, m)
	}
	cc := kafka.ConsumerConfig{Group: s.name("g"), Handle: handle, Topic: naming.Shared(s.name("in")),
		TenantFromHeaders: true, DeadLetter: func(context.Context, kafkago.Message, error) error { return nil },
		MaxWait: 50 * time.Millisecond, WorkerConfig: shards.WorkerConfig{Backoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, OnError: func(error) {}},
	}
	for _, f := range tune {
		f(&cc)
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		kafka.Module("events", kafka.Brokers(s.broker),
			kafka.ProducerRoute("in", kafka.ProducerConfig{Topic: naming.Shared(s.name("in")), Partitions: 1}),
			kafka.ProducerRoute("fwd", kafka.ProducerConfig{Topic: naming.Shared(s.name("fwd")), Partitions: 1}),
			kafka.Consumer("in-c", cc),
		),
		fx.Populate(p),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	return app, p
}

// TestHeaderConsumerRestartRedeliversBehindAParkedTenant: a consumer
// stopped while a tenant is parked commits nothing past that tenant's
// first record, so the consumer that takes over the group handles the
// parked records, and handles again the other tenant's records behind
// them (at least once), none lost.
func TestHeaderConsumerRestartRedeliversBehindAParkedTenant(t *testing.T) {
	s := newSpace(t)
	ctx := context.Background()
	first := newReceived()
	app, p := headerConsumerApp(t, s, first)
	if err := p.Provision.ProvisionShared(ctx); err != nil {
		t.Fatal(err)
	}
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	p.Tenants.Suspend(tenantA)
	raw := rawWriter(t, s.broker)
	write := func(id tenancy.ID, v string) {
		if err := raw.WriteMessages(ctx, kafkago.Message{Topic: s.name("in"), Value: []byte(v),
			Headers: []kafkago.Header{{Key: kafka.HeaderTenant, Value: []byte(id.String())}}}); err != nil {
			t.Fatal(err)
		}
	}
	write(tenantB, "b-before")
	write(tenantA, "a-0")
	write(tenantA, "a-1")
	write(tenantB, "b-after-0")
	write(tenantB, "b-after-1")
	first.waitFor(t, "b-before", "b-after-0", "b-after-1")
	if off := committed(t, s.broker, s.name("g"), s.name("in")); off != 1 {
		t.Errorf("committed offset %d, want 1: the parked tenant's first record", off)
	}
	if err := app.Stop(startCtx); err != nil {
		t.Fatal(err)
	}

	second := newReceived()
	app2, _ := headerConsumerApp(t, s, second) // its lifecycle suspends nobody
	startApp(t, app2)
	second.waitFor(t, "a-0", "a-1", "b-after-0", "b-after-1")
	by, count := second.snapshot()
	if !slices.Equal(by[tenantA.String()], []string{"a-0", "a-1"}) || count["b-before"] != 0 {
		t.Errorf("after the restart: %v (b-before was committed and must not come again)", by)
	}
}

// TestHeaderConsumerPastMaxHeldServesOthers: behind a parked tenant the
// consumer holds at most MaxHeld records; the parked tenant's records past
// that are left uncommitted and read again from the broker once its held
// ones went through, so the other tenant's records further on are handled
// while it is parked, the committed offset stays at the parked tenant's
// first record, and after the resume the parked tenant's records are
// handled in order, each once, none lost.
func TestHeaderConsumerPastMaxHeldServesOthers(t *testing.T) {
	t.Run("a few", func(t *testing.T) { pastMaxHeld(t, 8, 5, 3) })
	t.Run("thousands", func(t *testing.T) { pastMaxHeld(t, 1000, 100, 50) })
}

// pastMaxHeld writes B's first record, then nA of A's (A suspended) with
// B's other nB-1 spread among them, under MaxHeld maxHeld.
func pastMaxHeld(t *testing.T, nA, nB, maxHeld int) {
	s := newSpace(t)
	ctx := context.Background()
	got := newReceived()
	app, p := headerConsumerApp(t, s, got, func(c *kafka.ConsumerConfig) { c.MaxHeld = maxHeld })
	if err := p.Provision.ProvisionShared(ctx); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	p.Tenants.Suspend(tenantA)
	raw := rawWriter(t, s.broker)
	msg := func(id tenancy.ID, v string) kafkago.Message {
		return kafkago.Message{Topic: s.name("in"), Value: []byte(v),
			Headers: []kafkago.Header{{Key: kafka.HeaderTenant, Value: []byte(id.String())}}}
	}
	var aVals, bVals []string
	msgs := []kafkago.Message{msg(tenantB, "b-0")}
	bVals = append(bVals, "b-0")
	every := nA / (nB - 1)
	for i := range nA {
		v := fmt.Sprintf("a-%d", i)
		msgs = append(msgs, msg(tenantA, v))
		aVals = append(aVals, v)
		if (i+1)%every == 0 && len(bVals) < nB {
			v := fmt.Sprintf("b-%d", len(bVals))
			msgs = append(msgs, msg(tenantB, v))
			bVals = append(bVals, v)
		}
	}
	if err := raw.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	got.waitFor(t, bVals...)
	t.Logf("%d of B's records among %d of a parked tenant's (MaxHeld %d) handled within %v",
		len(bVals), nA, maxHeld, time.Since(begin).Round(time.Millisecond))
	if by, _ := got.snapshot(); len(by[tenantA.String()]) != 0 {
		t.Fatalf("the suspended tenant's records were handled: %d", len(by[tenantA.String()]))
	}
	if off := committed(t, s.broker, s.name("g"), s.name("in")); off != 1 {
		t.Errorf("committed offset %d, want 1: the parked tenant's first record", off)
	}
	p.Tenants.Resume(tenantA)
	begin = time.Now()
	got.waitFor(t, aVals...)
	t.Logf("after the resume, A's %d records handled within %v", nA, time.Since(begin).Round(time.Millisecond))
	// A record of A written after the resume comes after A's earlier ones.
	if err := raw.WriteMessages(ctx, msg(tenantA, "a-late")); err != nil {
		t.Fatal(err)
	}
	got.waitFor(t, "a-late")
	by, count := got.snapshot()
	if want := append(slices.Clone(aVals), "a-late"); !slices.Equal(by[tenantA.String()], want) {
		t.Errorf("A's records out of order (%d handled, want %d)", len(by[tenantA.String()]), len(want))
	}
	for v, n := range count {
		if n != 1 {
			t.Errorf("%s handled %d times, want once", v, n)
		}
	}
	// Everything handled: the commit reaches the end of the partition.
	end := int64(len(msgs) + 1)
	deadline := time.Now().Add(10 * time.Second)
	for off := committed(t, s.broker, s.name("g"), s.name("in")); off != end; off = committed(t, s.broker, s.name("g"), s.name("in")) {
		if time.Now().After(deadline) {
			t.Fatalf("committed offset %d, want %d once every record was handled", off, end)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHeaderConsumerReadsLeftRecordsAgainOnEveryPartition: over three
// partitions, a tenant whose handler fails has most of its records left on
// the broker (MaxHeld 20 of 600); the other tenant's records are handled
// meanwhile. Once the handler recovers, one of the left records fails
// again while they are read again (its tenant is parked once more); in the
// end every record was handled once, the failing tenant's in order on each
// partition, and every partition is committed to its end.
func TestHeaderConsumerReadsLeftRecordsAgainOnEveryPartition(t *testing.T) {
	const nA, nB, parts = 600, 60, 3
	s := newSpace(t)
	ctx := context.Background()
	var (
		mu       sync.Mutex
		down     = true
		failOnce = "a-450"
		count    = map[string]int{}
		order    = map[int][]int{} // partition → A's indexes, as handled
	)
	handle := func(ctx context.Context, m kafkago.Message) error {
		id, _ := tenancy.FromContext(ctx)
		v := string(m.Value)
		mu.Lock()
		defer mu.Unlock()
		if id == tenantA {
			if down {
				return errors.New("A's destination is down")
			}
			if v == failOnce {
				failOnce = ""
				return errors.New("A's destination failed once more")
			}
			var i int
			_, _ = fmt.Sscanf(v, "a-%d", &i) // a key of another form counts as 0
			order[m.Partition] = append(order[m.Partition], i)
		}
		count[v]++
		return nil
	}
	var d struct {
		fx.In
		Provision *migrate.Runner `name:"events"`
	}
	app := fx.New(fx.NopLogger,
		kafka.Module("events", kafka.Brokers(s.broker),
			kafka.ProducerRoute("in", kafka.ProducerConfig{Topic: naming.Shared(s.name("in")), Partitions: parts}),
			kafka.Consumer("in-c", kafka.ConsumerConfig{Group: s.name("g"), Handle: handle, Topic: naming.Shared(s.name("in")),
				TenantFromHeaders: true, DeadLetter: func(context.Context, kafkago.Message, error) error { return nil },
				MaxWait: 50 * time.Millisecond, MaxHeld: 20,
				WorkerConfig: shards.WorkerConfig{Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, OnError: func(error) {}}}),
		),
		fx.Populate(&d),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := d.Provision.ProvisionShared(ctx); err != nil {
		t.Fatal(err)
	}
	startApp(t, app)
	raw := rawWriter(t, s.broker)
	msg := func(id tenancy.ID, v string) kafkago.Message {
		return kafkago.Message{Topic: s.name("in"), Key: []byte(v), Value: []byte(v),
			Headers: []kafkago.Header{{Key: kafka.HeaderTenant, Value: []byte(id.String())}}}
	}
	var msgs []kafkago.Message
	var bVals []string
	for i := range nA {
		msgs = append(msgs, msg(tenantA, fmt.Sprintf("a-%d", i)))
		if i%(nA/nB) == 0 {
			v := fmt.Sprintf("b-%d", len(bVals))
			msgs = append(msgs, msg(tenantB, v))
			bVals = append(bVals, v)
		}
	}
	if err := raw.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	waitCount := func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			ok := done()
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s", what)
			}
		}
	}
	waitCount("B's records handled while A fails", func() bool {
		for _, v := range bVals {
			if count[v] == 0 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	down = false
	mu.Unlock()
	waitCount("every record handled", func() bool { return len(count) == len(msgs) })
	mu.Lock()
	defer mu.Unlock()
	for v, n := range count {
		if n != 1 {
			t.Errorf("%s handled %d times, want once", v, n)
		}
	}
	if failOnce != "" {
		t.Error("the record meant to fail again was never tried")
	}
	if len(order) != parts {
		t.Errorf("A's records handled from %d partitions, want %d", len(order), parts)
	}
	for p, idx := range order {
		t.Logf("partition %d: %d of A's records", p, len(idx))
		if !slices.IsSorted(idx) {
			t.Errorf("partition %d: A's records out of order", p)
		}
	}
	c, done := admin(s.broker)
	defer done()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, err := c.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: s.name("g"), Topics: map[string][]int{s.name("in"): {0, 1, 2}}})
		if err != nil {
			t.Fatal(err)
		}
		sum := int64(0)
		for _, p := range res.Topics[s.name("in")] {
			sum += max(p.CommittedOffset, 0)
		}
		if sum == int64(len(msgs)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed %d of %d records across the partitions", sum, len(msgs))
		}
	}
}
