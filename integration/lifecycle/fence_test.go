package lifecycle_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type pgFence struct {
	fx.In
	Tenants *modules.Tenants
	Client  *postgres.Client `name:"pg"`
	Docs    *postgres.Documents[order]
	Idem    *postgres.Idempotency `name:"idem"`
}

// pgFenced starts an app with a tagged document route and a tagged
// idempotency route on the real PostgreSQL.
func pgFenced(t *testing.T) pgFence {
	t.Helper()
	run := unique()
	var d pgFence
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix("fe"+run+"_"), modules.AllowTeardown(),
			postgres.Document[order]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("fe_orders_" + run)}),
			postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{TenantAware: true, Table: naming.Shared("fe_idem_" + run)})),
		fx.Populate(&d))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return d
}

// offboardAcross runs an Offboard of tenant while inFlight is running
// (started first, until it signals begun) and returns the Offboard's
// error once inFlight has been let go (release) and has returned.
func offboardAcross(t *testing.T, tn *modules.Tenants, tenant tenancy.ID, begun, release chan struct{}, inFlightDone <-chan error) error {
	t.Helper()
	<-begun
	off := make(chan error, 1)
	go func() { _, err := tn.Offboard(context.Background(), tenant); off <- err }()
	for !tn.Suspended(tenant) {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-off:
		t.Errorf("Offboard returned (%v) while a call of the tenant that began before was still running", err)
		close(release)
		if callErr := <-inFlightDone; callErr != nil {
			t.Logf("the call in flight ended with %v", callErr)
		}
		return err
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-inFlightDone; err != nil {
		t.Logf("the call in flight ended with %v", err)
	}
	return <-off
}

// TestOffboardFencesAnOpenUnitOfWork: a unit of work of A that wrote a
// tagged row and is still open when A is offboarded holds the teardown
// until it ends; whatever it commits is then removed, so A provisioned
// again reads nothing.
func TestOffboardFencesAnOpenUnitOfWork(t *testing.T) {
	d := pgFenced(t)
	ctx := context.Background()
	a := tenancytest.FreshTenant(t)
	if _, err := d.Tenants.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	ctxA := tenancy.WithTenant(ctx, a)
	begun, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- d.Client.InTx(ctxA, func(ctx context.Context) error {
			if _, err := d.Docs.Create(ctx, "early", order{"anvil"}); err != nil {
				return err
			}
			close(begun)
			<-release
			return nil // commits, after the offboard began
		})
	}()
	if err := offboardAcross(t, d.Tenants, a, begun, release, done); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Tenants.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Docs.Count(ctxA, document.Query{}); err != nil || n != 0 {
		t.Fatalf("A provisioned again reads %d rows (%v): a unit open across its offboard committed after the teardown", n, err)
	}
}

// TestOffboardFencesIdempotencyDo: an Idempotency.Do of A whose function
// runs across A's offboard stores its result before the teardown removes
// it, or not at all: A provisioned again runs its function afresh.
func TestOffboardFencesIdempotencyDo(t *testing.T) {
	d := pgFenced(t)
	ctx := context.Background()
	a := tenancytest.FreshTenant(t)
	if _, err := d.Tenants.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	ctxA := tenancy.WithTenant(ctx, a)
	begun, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, _, err := d.Idem.Do(ctxA, "charge-1", func(context.Context) ([]byte, error) {
			close(begun)
			<-release
			return []byte("old"), nil
		})
		done <- err
	}()
	if err := offboardAcross(t, d.Tenants, a, begun, release, done); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Tenants.Provision(ctx, a); err != nil {
		t.Fatal(err)
	}
	res, replayed, err := d.Idem.Do(ctxA, "charge-1", func(context.Context) ([]byte, error) { return []byte("new"), nil })
	if err != nil || replayed || string(res) != "new" {
		t.Fatalf("A provisioned again: Do = %q, replayed %v (%v); want a fresh run", res, replayed, err)
	}
}

// kafkaFenced starts an app with a per-tenant topic producer and a
// sharded consumer of it on the real broker, whose tenant set always
// lists tenants (as the registry's ready tenants do, suspended or not).
// probe, when set, is a module whose teardown runs before Kafka's.
func kafkaFenced(t *testing.T, got *seen, probe func(tenancy.ID), tenants ...tenancy.ID) (*modules.Tenants, *kafka.Producer, string, string) {
	t.Helper()
	run := unique()
	broker := strings.Split(testsvc.KafkaBrokers(t), ",")[0]
	prefix, group := "fe-"+run+"-orders.", "fe-"+run
	var tn *modules.Tenants
	var p *kafka.Producer
	type probeCore struct{}
	opts := []fx.Option{fx.NopLogger, modules.Lifecycle(),
		kafka.Module("bus", kafka.Brokers(broker), modules.AllowTeardown(),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.PerTenant(prefix)}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{Topic: naming.PerTenant(prefix), Group: group, Handle: got.handle,
				WorkerConfig: shards.WorkerConfig{Tenants: func(context.Context) ([]tenancy.ID, error) { return tenants, nil }, Refresh: 50 * time.Millisecond},
				MaxWait:      100 * time.Millisecond})),
		fx.Invoke(fx.Annotate(func(x *kafka.Producer) { p = x }, fx.ParamTags(`name:"orders"`))),
		fx.Populate(&tn)}
	if probe != nil {
		opts = append(opts, fx.Provide(func() probeCore { return probeCore{} }),
			modules.ProvideTenantState(func(probeCore) modules.TenantState {
				return modules.TenantState{Module: "a-probe", Backend: "test", Offboard: func(_ context.Context, id tenancy.ID) error { probe(id); return nil }}
			}))
	}
	app := fx.New(opts...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range tenants {
		if _, err := tn.Provision(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	ctxS, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := app.Start(ctxS); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = app.Stop(ctx)
		for _, id := range tenants {
			tn.Resume(id)
			_, _ = tn.Offboard(ctx, id)
		}
	})
	return tn, p, broker, prefix
}

// seen records the values a consumer handled, by tenant.
type seen struct {
	mu sync.Mutex
	by map[tenancy.ID][]string
	// fail is a value whose handling always fails (counted in by).
	fail string
}

func (s *seen) handle(ctx context.Context, m kafkago.Message) error {
	id, _ := tenancy.FromContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[tenancy.ID][]string{}
	}
	s.by[id] = append(s.by[id], string(m.Value))
	if s.fail != "" && string(m.Value) == s.fail {
		return errors.New("handler refuses " + s.fail)
	}
	return nil
}

func (s *seen) of(id tenancy.ID) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.by[id])
}

func eventually(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
	}
}

func topicExists(t *testing.T, broker, topic string) bool {
	t.Helper()
	tr := &kafkago.Transport{}
	defer tr.CloseIdleConnections()
	md, err := (&kafkago.Client{Addr: kafkago.TCP(broker), Transport: tr}).Metadata(context.Background(), &kafkago.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range md.Topics {
		if tp.Name == topic && !errors.Is(tp.Error, kafkago.UnknownTopicOrPartition) {
			return true
		}
	}
	return false
}

// TestOffboardStopsTheTenantsReaderFirst: the broker auto-creates topics
// (scripts/kafka.sh sets auto.create.topics.enable, Kafka's default).
// A sharded consumer's reader of A, running when A is offboarded, has
// stopped before the first teardown runs (its group has no member then),
// and nothing brings A's deleted topic back afterwards, though the set
// the consumer follows still lists A.
func TestOffboardStopsTheTenantsReaderFirst(t *testing.T) {
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	got := &seen{}
	var members atomic.Int32
	members.Store(-1)
	var broker, group string
	tn, p, broker, prefix := kafkaFenced(t, got, func(id tenancy.ID) {
		if id == a {
			members.Store(int32(groupMembers(t, broker, group+"."+a.Hex())))
		}
	}, a, b)
	group = "fe-" + strings.TrimSuffix(strings.TrimPrefix(prefix, "fe-"), "-orders.")
	ctx := context.Background()
	for _, id := range []tenancy.ID{a, b} {
		if err := p.Produce(tenancy.WithTenant(ctx, id), kafka.Message{Value: []byte("first")}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both readers handle their first record", 30*time.Second, func() bool { return len(got.of(a)) == 1 && len(got.of(b)) == 1 })
	if _, err := tn.Offboard(ctx, a); err != nil {
		t.Fatal(err)
	}
	if n := members.Load(); n != 0 {
		t.Errorf("A's consumer group had %d member(s) when the first teardown ran, want 0", n)
	}
	deadline := time.Now().Add(6 * time.Second) // several rejoin and metadata cycles of a reader
	for time.Now().Before(deadline) {
		if topicExists(t, broker, prefix+a.Hex()) {
			t.Fatal("A's topic came back after its offboard: a reader of A still ran")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := p.Produce(tenancy.WithTenant(ctx, b), kafka.Message{Value: []byte("second")}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "B is still served", 20*time.Second, func() bool { return len(got.of(b)) == 2 })
}

func groupMembers(t *testing.T, broker, group string) int {
	tr := &kafkago.Transport{}
	defer tr.CloseIdleConnections()
	res, err := (&kafkago.Client{Addr: kafkago.TCP(broker), Transport: tr}).DescribeGroups(context.Background(), &kafkago.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil || len(res.Groups) != 1 {
		t.Errorf("describing group %s: %v", group, err)
		return -1
	}
	return len(res.Groups[0].Members)
}

// TestSuspendedTenantsShardStops: a suspended tenant's reader stops at
// once, though the consumer's set still lists it: a record written to its
// topic meanwhile is not handled until the tenant is resumed, and no
// restart is needed for either.
func TestSuspendedTenantsShardStops(t *testing.T) {
	a := tenancytest.FreshTenant(t)
	got := &seen{}
	tn, p, broker, prefix := kafkaFenced(t, got, nil, a)
	ctx := context.Background()
	if err := p.Produce(tenancy.WithTenant(ctx, a), kafka.Message{Value: []byte("first")}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "A's reader handles its first record", 30*time.Second, func() bool { return len(got.of(a)) == 1 })
	tn.Suspend(a)
	time.Sleep(500 * time.Millisecond) // the reader's in-flight fetch ends
	w := &kafkago.Writer{Addr: kafkago.TCP(broker), Topic: prefix + a.Hex()}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafkago.Message{Value: []byte("while-suspended")}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if vs := got.of(a); len(vs) != 1 {
		t.Fatalf("a suspended tenant's record was handled: %v", vs)
	}
	tn.Resume(a)
	eventually(t, "A's reader runs again once resumed", 30*time.Second, func() bool { return len(got.of(a)) == 2 })
}

// TestOffboardAbandonsARecordItsHandlerRetries: a record of A whose
// handler keeps failing (its calls refused once A is suspended) does not
// hold A's offboard: the reader abandons it uncommitted at the
// suspension, closes, and the offboard completes well within its deadline.
func TestOffboardAbandonsARecordItsHandlerRetries(t *testing.T) {
	a := tenancytest.FreshTenant(t)
	got := &seen{fail: "stuck"}
	tn, p, _, _ := kafkaFenced(t, got, nil, a)
	ctx := context.Background()
	if err := p.Produce(tenancy.WithTenant(ctx, a), kafka.Message{Value: []byte("stuck")}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler is retrying A's record", 30*time.Second, func() bool { return len(got.of(a)) >= 2 })
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := tn.Offboard(octx, a); err != nil {
		t.Fatalf("offboard with a record being retried: %v", err)
	}
}
