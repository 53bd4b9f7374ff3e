package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Handler handles one record. Its ctx is bound to the record's tenant
// (sharded, or from headers) or is tenant-global (unbound). Returning nil
// commits the record; an error retries it after a backoff.
type Handler func(ctx context.Context, m kafkago.Message) error

// DeadLetterFunc receives a record whose tenant header is missing or
// malformed, under a tenant-global ctx, with the reason. Returning nil
// commits the record; an error retries the dead-lettering.
type DeadLetterFunc func(ctx context.Context, m kafkago.Message, reason error) error

// ConsumerConfig declares a consumer route and the consumer-group worker
// that drains it; a zero Topic is refused at wiring.
type ConsumerConfig struct {
	// Topic names the topics read, as ProducerConfig's: naming.Shared,
	// naming.PerTenant or naming.Func.
	Topic naming.Name
	// TenantAware is refused (kafka_tenancy_validation_failed), as
	// ProducerConfig's.
	TenantAware bool
	// Partitions and ReplicationFactor are what provisioning creates the
	// route's topics with, as ProducerConfig's.
	Partitions, ReplicationFactor int
	// Name names the worker in the wiring; default "<route>-consumer".
	Name string
	// Group is the consumer group (required). A sharded consumer joins one
	// group per tenant, "<Group>.<tenant hex>".
	Group string
	// Handle is called for every record (required).
	Handle Handler
	// WorkerConfig: Tenants makes the worker sharded: one reader per
	// assigned tenant, on that tenant's topic (and client, when routed),
	// bound to that tenant. It is read again every Refresh: a tenant added
	// gets its reader, one removed has its reader leave the group once the
	// record in flight is committed. Backoff is the wait before retrying a
	// failed fetch, handler or commit; under TenantFromHeaders it is where
	// a failing tenant's backoff starts: doubled per failure in a row,
	// capped at MaxBackoff, while other tenants' records behind it are
	// handled. OnError observes fetch, handler and commit errors (default:
	// a warning on Logger, else the app's *slog.Logger, else
	// slog.Default()). Fence is set by the module.
	shards.WorkerConfig
	// TenantFromHeaders opts in to binding each record's tenant from its
	// tenant header, on a tenant-global topic. Headers are untrusted:
	// whoever can produce to the topic chooses them. Needs DeadLetter.
	// Tenants take turns: after Turn records of one tenant in a row from a
	// backlog (each with more behind it on its partition), its later ones
	// are left on the broker, uncommitted, while the consumer reads ahead to
	// other tenants' records, and are read again after.
	TenantFromHeaders bool
	// DeadLetter takes records without a valid tenant header.
	DeadLetter DeadLetterFunc
	// MaxWait is the longest a fetch waits for new records (default 250ms).
	MaxWait time.Duration
	// MaxHeld bounds the records a TenantFromHeaders consumer holds in
	// memory behind parked tenants (default 1000). Past it, a parked
	// tenant's later records are left on the broker, uncommitted, and read
	// again once its held records went through; other tenants' records go
	// on being fetched and handled.
	MaxHeld int
	// Turn is how many records of one tenant in a row a TenantFromHeaders
	// consumer handles from a backlog before the other tenants' turn
	// (default 100): it bounds, in records, how long one tenant's backlog
	// delays another's next record. A smaller turn is fairer; each turn
	// over costs a read of the left records again.
	Turn int
	// MaxAhead bounds the records one read ahead past a backlog passes
	// over looking for the other tenants' (default 100,000); past it the
	// backlog's left records are read again, so a backlog longer than it
	// delays a record behind it by about one turn per MaxAhead records.
	MaxAhead int
}

type consumerSpec struct {
	route string
	cfg   ConsumerConfig
}

// Consumer adds a consumer route named name over cfg's topic and the
// worker that drains it. The worker is declared to enforcement: unbound
// over per-tenant topics or a routed client it is refused with
// tenant_global_required during fx.New.
func Consumer(name string, cfg ConsumerConfig) Option {
	if cfg.Name == "" {
		cfg.Name = name + "-consumer"
	}
	return modules.Own(func(c *config) {
		c.routes = append(c.routes, newSpec(name, kindConsumer, "kafka.ConsumerConfig", topicFields{
			cfg.Topic, cfg.TenantAware, cfg.Partitions, cfg.ReplicationFactor,
		}))
		c.consumers = append(c.consumers, &consumerSpec{route: name, cfg: cfg})
	})
}

func (s *consumerSpec) binding() floors.Binding {
	switch {
	case s.cfg.Tenants != nil:
		return floors.Sharded
	case s.cfg.TenantFromHeaders:
		return floors.FromHeaders
	}
	return floors.Unbound
}

func (s *consumerSpec) decl(module string) floors.Worker {
	return floors.Worker{Name: s.cfg.Name, Module: module, Route: s.route, Binding: s.binding()}
}

func (s *consumerSpec) validate(spec *routeSpec, routed bool) []tenancy.Problem {
	bad := s.cfg.Check("kafka.ConsumerConfig", s.cfg.Name, shards.Duration("MaxWait", s.cfg.MaxWait), shards.Count("MaxHeld", s.cfg.MaxHeld),
		shards.Count("Turn", s.cfg.Turn), shards.Count("MaxAhead", s.cfg.MaxAhead))
	if s.cfg.Group == "" {
		bad = append(bad, tenancy.Problem{Detail: "a consumer needs a Group", Fix: "set kafka.ConsumerConfig.Group to the consumer group's name"})
	}
	if s.cfg.Handle == nil {
		bad = append(bad, tenancy.Problem{Detail: "a consumer needs a Handle", Fix: "set kafka.ConsumerConfig.Handle to the function that handles each record"})
	}
	if s.cfg.Tenants != nil && s.cfg.TenantFromHeaders {
		bad = append(bad, tenancy.Problem{Detail: "a consumer is either sharded (Tenants) or binds from headers, not both",
			Fix: "drop kafka.ConsumerConfig.TenantFromHeaders (sharded: one bound reader per assigned tenant) or drop kafka.ConsumerConfig.Tenants"})
	}
	if s.cfg.TenantFromHeaders && s.cfg.DeadLetter == nil {
		bad = append(bad, tenancy.Problem{Detail: "TenantFromHeaders needs a DeadLetter handler: a record without a valid tenant header is never handled as tenant-less",
			Fix: "set kafka.ConsumerConfig.DeadLetter to the function that takes records without a valid tenant header"})
	}
	if s.cfg.Tenants != nil && spec != nil && spec.perTenant == nil && !routed {
		bad = append(bad, tenancy.Problem{Detail: "a sharded consumer needs per-tenant topics or a routed client: binding every tenant to one shared topic would hand each tenant everyone's records",
			Fix: "set kafka.ConsumerConfig.Topic to naming.PerTenant(prefix) (one topic per tenant), or build the module with kafka.Routed"})
	}
	return bad
}

func (s *consumerSpec) invoke(module string, spec *routeSpec) fx.Option {
	return fx.Invoke(fx.Annotate(func(lc fx.Lifecycle, c *core, app *slog.Logger) {
		if s.cfg.Logger != nil {
			app = s.cfg.Logger
		}
		w := &worker{spec: s, route: newRoute(c, spec), wc: s.cfg.WorkerConfig,
			lag: c.tel.Lag(telemetry.RouteInfo{Backend: rules.Name, Module: module, Route: s.route})}
		w.wc.Logger, w.wc.Fence = modules.WorkerLogger(app, rules.Name, module, s.route, s.cfg.Name), c.suspensions.Fence()
		w.wc = w.wc.WithDefaults()
		lc.Append(fx.Hook{OnStart: w.start, OnStop: w.stop})
	}, fx.ParamTags(``, ``, `optional:"true"`)))
}

// worker runs a consumer's readers between OnStart and OnStop.
type worker struct {
	spec  *consumerSpec
	route route
	// wc is the consumer's WorkerConfig with its defaults, its Logger the
	// worker's and its Fence the app's suspensions.
	wc shards.WorkerConfig
	// lag reports each reader's lag to the metrics (nil: no meter).
	lag *telemetry.Lag
	// shards runs the readers: one unbound, or one per tenant following a
	// sharded consumer's set.
	shards *shards.Group
}

type shard struct {
	tenant  tenancy.ID // zero: unbound or from headers
	reader  *kafkago.Reader
	release func()
	// part opens a reader of one partition outside the group, on the
	// same client (a header-bound consumer reads left records again).
	part func(topic string, n int) *kafkago.Reader
}

func (w *worker) start(ctx context.Context) error {
	if w.spec.cfg.Tenants == nil {
		sh, err := w.open(ctx, tenancy.ID{})
		if err != nil {
			return err
		}
		w.shards = shards.One(func(ctx context.Context, stop <-chan struct{}) { w.serve(ctx, stop, sh) })
		return nil
	}
	// The first set's readers are checked here, so that a tenant whose
	// reader cannot be built fails the start; tenants added later are
	// checked in their shard, retried until they open. Every reader is
	// built in its shard, which the app's suspensions fence (shards.Fence):
	// a suspended tenant's reader stops at once, before an Offboard
	// deletes its topic, and a suspended tenant gets none.
	ts, err := w.spec.cfg.Tenants(ctx)
	if err != nil {
		return fmt.Errorf("kafka: consumer %s: assigned tenants: %w", w.spec.cfg.Name, err)
	}
	for _, t := range ts {
		_, _, release, err := w.prepare(ctx, t)
		if errors.Is(err, tenancy.CodeTenantNotProvisioned) || errors.Is(err, errTopicCheck) || errors.Is(err, tenancy.CodeTenantSuspended) {
			continue // its shard logs it and retries, or never runs
		}
		if err != nil {
			return err
		}
		release()
	}
	cfg := shards.Config{Name: w.spec.cfg.Name, WorkerConfig: w.wc,
		Run: func(ctx context.Context, stop <-chan struct{}) {
			tenant, _ := tenancy.FromContext(ctx)
			var sh shard
			waiting := false // for its topic: logged once, not per attempt
			for {
				var err error
				if sh, err = w.open(ctx, tenant); err == nil {
					break
				}
				if errors.Is(err, tenancy.CodeTenantSuspended) {
					return // its fence stops the shard too
				}
				wait := w.retry()
				if errors.Is(err, tenancy.CodeTenantNotProvisioned) {
					wait = max(wait, time.Second)
					if waiting {
						err = nil
					}
					waiting = true
				}
				if err != nil {
					w.report(tenant, err)
				}
				if !shards.Sleep(ctx, stop, wait) {
					return
				}
			}
			w.serve(ctx, stop, sh)
		}}
	g, err := shards.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("kafka: consumer %s: %w", w.spec.cfg.Name, err)
	}
	w.shards = g
	return nil
}

// serve runs one shard's reader until ctx ends or stop closes (its tenant
// left the set): a record in flight is handled and committed first; then
// the reader leaves its group.
func (w *worker) serve(ctx context.Context, stop <-chan struct{}, sh shard) {
	defer sh.release()
	defer sh.reader.Close()
	// The reader's lag, read when metrics are collected (Stats is safe
	// beside the reader's own calls).
	defer w.lag.Track(sh.tenant, func() int64 { return sh.reader.Stats().Lag })()
	fetch := ctx
	if stop != nil {
		var cancel, abandon context.CancelFunc
		fetch, cancel = context.WithCancel(ctx)
		defer cancel()
		// A record in flight is handled and committed when the set drops
		// the tenant, but abandoned, uncommitted, when it is suspended:
		// its handler's calls are refused, and an offboard waits for the
		// reader to close.
		ctx, abandon = context.WithCancel(ctx)
		defer abandon()
		go func() {
			select {
			case <-stop:
				cancel()
				if w.route.core.suspensions.Suspended(sh.tenant) {
					abandon()
				}
			case <-fetch.Done():
			}
		}()
	}
	w.loop(ctx, fetch, sh)
}

func (w *worker) open(ctx context.Context, tenant tenancy.ID) (shard, error) {
	c, topic, release, err := w.prepare(ctx, tenant)
	if err != nil {
		return shard{}, err
	}
	maxWait := w.maxWait()
	group := w.spec.cfg.Group
	if !tenant.IsZero() {
		// One group per tenant: a shard joining or leaving rebalances
		// only its own tenant's readers.
		group += "." + tenant.Hex()
	}
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers: c.brokers, Dialer: c.dialer, GroupID: group, Topic: topic,
		MaxWait: maxWait, StartOffset: kafkago.FirstOffset,
		HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second,
		ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: time.Second, JoinGroupBackoff: time.Second,
		// Group and connection errors never reach FetchMessage; surface them.
		ErrorLogger: kafkago.LoggerFunc(func(msg string, args ...any) { w.report(tenant, fmt.Errorf(msg, args...)) }),
	})
	part := func(topic string, n int) *kafkago.Reader {
		return kafkago.NewReader(kafkago.ReaderConfig{
			Brokers: c.brokers, Dialer: c.dialer, Topic: topic, Partition: n, MaxWait: maxWait,
			ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: time.Second,
			ErrorLogger: kafkago.LoggerFunc(func(msg string, args ...any) { w.report(tenant, fmt.Errorf(msg, args...)) }),
		})
	}
	return shard{tenant: tenant, reader: r, release: release, part: part}, nil
}

// maxWait is the longest a fetch waits for new records.
func (w *worker) maxWait() time.Duration {
	if w.spec.cfg.MaxWait > 0 {
		return w.spec.cfg.MaxWait
	}
	return 250 * time.Millisecond
}

// prepare checks what tenant's reader needs: the tenant not suspended
// (before anything reaches the broker: a suspended tenant's topic may be
// going), its topic and client, and its topic there. The caller releases
// the client when err is nil.
func (w *worker) prepare(ctx context.Context, tenant tenancy.ID) (*client, string, func(), error) {
	if w.spec.cfg.Tenants != nil && tenant.IsZero() {
		return nil, "", nil, fmt.Errorf("kafka: consumer %s: assigned the zero tenant", w.spec.cfg.Name)
	}
	if !tenant.IsZero() {
		if err := w.route.core.suspensions.Check(tenant, rules.Name, w.route.core.module, w.spec.route); err != nil {
			return nil, "", nil, err
		}
	}
	topic, err := w.route.topicFor(tenant)
	if err != nil {
		return nil, "", nil, err
	}
	c, release, err := w.route.core.clientFor(ctx, tenant)
	if err != nil {
		return nil, "", nil, err
	}
	if !tenant.IsZero() {
		// kafka-go's group reader reads partitions with a metadata request
		// that lets the broker auto-create the topic: ask first, without.
		missing, err := c.missingTopics(ctx, []string{topic})
		if err != nil {
			err = fmt.Errorf("%w %s: %w", errTopicCheck, topic, err)
		} else if len(missing) > 0 {
			err = notProvisioned(w.route.core.module, w.spec.route, topic, kafkago.UnknownTopicOrPartition)
		}
		if err != nil {
			release()
			return nil, "", nil, err
		}
	}
	return c, topic, release, nil
}

// errTopicCheck: the brokers could not be asked whether a shard's topic
// exists (a start does not fail on it: the shard retries).
var errTopicCheck = errors.New("checking topic")

// stop cancels the readers and waits for them to leave their groups, at
// most as long as ctx allows.
func (w *worker) stop(ctx context.Context) error {
	if err := w.shards.Stop(ctx); err != nil {
		return fmt.Errorf("kafka: consumer %s: readers still closing: %w", w.spec.cfg.Name, err)
	}
	return nil
}

// loop fetches under fetch (which ends with ctx, or when the shard must
// stop) and handles and commits under ctx, so a record fetched is handled
// and committed even when its shard is told to stop meanwhile.
func (w *worker) loop(ctx, fetch context.Context, sh shard) {
	if sh.tenant.IsZero() && w.spec.cfg.TenantFromHeaders {
		// Many tenants share the partitions: a failing tenant is parked.
		newParkedLoop(w, sh).run(ctx, fetch)
		return
	}
	for {
		m, err := sh.reader.FetchMessage(fetch)
		if err != nil {
			if fetch.Err() != nil {
				return
			}
			w.report(sh.tenant, fmt.Errorf("fetch: %w", err))
			if !shards.Sleep(ctx, nil, w.retry()) {
				return
			}
			continue
		}
		if !w.process(ctx, sh.tenant, m) {
			return
		}
		for {
			err := sh.reader.CommitMessages(ctx, m)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			w.report(w.recordTenant(sh, m), fmt.Errorf("commit: %w", err))
			if !shards.Sleep(ctx, nil, w.retry()) {
				return
			}
		}
	}
}

// recordTenant is the tenant m was handled under (zero: none).
func (w *worker) recordTenant(sh shard, m kafkago.Message) tenancy.ID {
	if sh.tenant.IsZero() && w.spec.cfg.TenantFromHeaders {
		id, _ := TenantFromHeaders(m.Headers)
		return id
	}
	return sh.tenant
}

// process handles m under the right binding, retrying until it succeeds;
// false means the worker is stopping and m stays uncommitted.
func (w *worker) process(ctx context.Context, tenant tenancy.ID, m kafkago.Message) bool {
	if w.route.tel == nil {
		return w.handleRecord(ctx, tenant, m)
	}
	// One consumer span per record, linked to the span that produced it;
	// the handler's own spans nest under it.
	id := tenant
	if id.IsZero() && w.spec.cfg.TenantFromHeaders {
		id, _ = TenantFromHeaders(m.Headers)
	}
	ctx, span := w.route.tel.StartLinked(ctx, id, w.traceCarrier(m.Headers))
	ok := w.handleRecord(ctx, tenant, m)
	if ok {
		span.End(nil)
	} else {
		span.End(ctx.Err())
	}
	return ok
}

func (w *worker) handleRecord(ctx context.Context, tenant tenancy.ID, m kafkago.Message) bool {
	tenant, call := w.bind(ctx, tenant, m)
	for {
		err := call()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		w.report(tenant, fmt.Errorf("handle %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err))
		if !shards.Sleep(ctx, nil, w.retry()) {
			return false
		}
	}
}

// bind returns the call that handles m under the right binding (or
// dead-letters it) and the record's tenant: tenant when known, else the
// header's; zero for a tenant-global or dead-lettered record.
func (w *worker) bind(ctx context.Context, tenant tenancy.ID, m kafkago.Message) (tenancy.ID, func() error) {
	// The handler's log lines name the consumer (modules.TenantHandler).
	ctx = modules.WithCallSite(ctx, w.route.core.module, w.route.spec.name)
	var call func() error
	// tenant stays the record's tenant when known, for the log; zero for a
	// tenant-global or dead-lettered record.
	switch {
	case !tenant.IsZero():
		bound := tenancy.WithTenant(ctx, tenant)
		call = func() error { return w.spec.cfg.Handle(bound, m) }
	case w.spec.cfg.TenantFromHeaders:
		id, reason := TenantFromHeaders(m.Headers)
		if reason != nil {
			global := tenancy.WithGlobal(ctx)
			call = func() error { return w.spec.cfg.DeadLetter(global, m, reason) }
		} else {
			tenant = id
			bound := tenancy.WithTenant(ctx, id)
			call = func() error { return w.spec.cfg.Handle(bound, m) }
		}
	default:
		global := tenancy.WithGlobal(ctx)
		call = func() error { return w.spec.cfg.Handle(global, m) }
	}
	return tenant, call
}

// TenantFromHeaders reads the tenant a record's headers claim. Exactly one
// tenant header holding a canonical, non-zero tenant UUID is accepted;
// anything else is an invalid_tenant_header error. The claim is only as
// trustworthy as whoever may produce to the topic.
func TenantFromHeaders(hs []kafkago.Header) (tenancy.ID, error) {
	var found []byte
	n := 0
	for _, h := range hs {
		if h.Key == HeaderTenant {
			found, n = h.Value, n+1
		}
	}
	bad := func(detail string) error {
		return &tenancy.Error{Code: tenancy.CodeInvalidTenantHeader, Backend: rules.Name, Detail: detail,
			Fix: "produce through a tenantwire producer with the tenant bound, or route such records elsewhere"}
	}
	switch {
	case n == 0:
		return tenancy.ID{}, bad("record has no " + HeaderTenant + " header")
	case n > 1:
		return tenancy.ID{}, bad("record has more than one " + HeaderTenant + " header")
	}
	id, err := tenancy.ParseID(string(found))
	if err != nil || id.IsZero() {
		return tenancy.ID{}, bad(HeaderTenant + " header is not a tenant UUID")
	}
	return id, nil
}

func (w *worker) retry() time.Duration { return w.wc.Backoff }

// report passes err to OnError, or logs it with the tenant it concerns
// (zero: none, for an unbound shard or a record without a valid header).
func (w *worker) report(tenant tenancy.ID, err error) {
	ctx := context.Background()
	if !tenant.IsZero() {
		ctx = tenancy.WithTenant(ctx, tenant)
	}
	w.wc.Report(ctx, "tenantwire: consumer failed", fmt.Errorf("kafka: consumer %s: %w", w.spec.cfg.Name, err))
}
