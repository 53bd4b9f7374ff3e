package tenantotel_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/adapters/redis"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantotel"
)

// driverLog records the span context of each driver operation's context,
// as a driver's own instrumentation (otelpgx, redisotel) sees it: that
// span is the parent of the span it starts.
type driverLog struct {
	mu  sync.Mutex
	ops []driverOp
}

type driverOp struct {
	what string // the statement or command
	sc   trace.SpanContext
}

func (l *driverLog) add(ctx context.Context, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, driverOp{what, trace.SpanContextFromContext(ctx)})
}

// in returns the operations recorded in trace id.
func (l *driverLog) in(id trace.TraceID) []driverOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []driverOp
	for _, op := range l.ops {
		if op.sc.TraceID() == id {
			out = append(out, op)
		}
	}
	return out
}

// pgx's QueryTracer, as otelpgx is.
func (l *driverLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.add(ctx, d.SQL)
	return ctx
}

func (l *driverLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// go-redis's Hook, as redisotel's tracing hook is.
func (l *driverLog) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (l *driverLog) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		l.add(ctx, cmd.FullName())
		return next(ctx, cmd)
	}
}

func (l *driverLog) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			l.add(ctx, c.FullName())
		}
		return next(ctx, cmds)
	}
}

// requireNested runs call under a caller's span of a trace of its own and
// checks that every driver operation of that trace ran under the route
// span of that name, so the driver's spans are its children, not its
// siblings under the caller's span.
func requireNested(t *testing.T, rec *tracetest.SpanRecorder, tracer trace.Tracer, log *driverLog, ctx context.Context, span string, call func(context.Context) error) {
	t.Helper()
	ctx, caller := tracer.Start(ctx, "caller")
	err := call(ctx)
	caller.End()
	if err != nil {
		t.Fatalf("%s: %v", span, err)
	}
	id := caller.SpanContext().TraceID()
	var route sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == span && s.SpanContext().TraceID() == id {
			route = s
		}
	}
	if route == nil {
		t.Fatalf("%s: no route span in the call's trace: %s", span, names(rec.Ended()))
	}
	ops := log.in(id)
	if len(ops) == 0 {
		t.Fatalf("%s: the driver saw no operation in the call's trace", span)
	}
	for _, op := range ops {
		if op.sc.SpanID() != route.SpanContext().SpanID() {
			t.Errorf("%s: %q ran under span %s, want the route span %s (the caller's is %s)",
				span, op.what, op.sc.SpanID(), route.SpanContext().SpanID(), caller.SpanContext().SpanID())
		}
	}
}

// TestDriverSpansNestUnderPostgresRouteSpans: every statement a
// PostgreSQL route call runs reaches pgx with a context carrying the
// call's route span, so otelpgx's spans are its children: a tagged
// document read, a document list in the tenant's schema (namespace), a
// counter, and a document read inside a unit of work (which joins the
// unit's transaction).
func TestDriverSpansNestUnderPostgresRouteSpans(t *testing.T) {
	dsn := testsvc.PostgresURL(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	log := &driverLog{}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = log
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	rec := tracetest.NewSpanRecorder()
	var d struct {
		fx.In
		C       *postgres.Client           `name:"shop"`
		Orders  *postgres.Documents[order] `name:"orders"`
		Notes   *postgres.Documents[order] `name:"notes"`
		Counter *postgres.Counter          `name:"hits"`
		Tel     *telemetry.Telemetry
	}
	orders, hits := "nest_orders_"+suffix, "nest_hits_"+suffix
	app := fx.New(fx.NopLogger,
		tenantotel.Module(tenantotel.Config{SpanProcessors: []sdktrace.SpanProcessor{rec}, NoMetricsRoute: true}),
		postgres.Module("shop", postgres.Use(pool), postgres.SchemaPrefix("twnest"+suffix+"_"), modules.AllowTeardown(),
			postgres.Document[order]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(orders)}),
			postgres.Document[order]("notes", postgres.DocumentConfig{Read: naming.PerTenant("nest_notes")}),
			postgres.CounterRoute("hits", postgres.CounterConfig{TenantAware: true, Table: naming.Shared(hits)})),
		fx.Populate(&d),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.C.Teardown(context.Background(), tenantA)
		_ = app.Stop(context.Background())
		_, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{orders}.Sanitize()+", "+pgx.Identifier{hits}.Sanitize())
	})
	if err := d.C.Provision(context.Background(), tenantA); err != nil {
		t.Fatal(err)
	}
	bound := tenancy.WithTenant(context.Background(), tenantA)
	if _, err := d.Orders.Create(bound, "o1", order{Qty: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Notes.Create(bound, "n1", order{Qty: 2}); err != nil {
		t.Fatal(err)
	}
	tracer := d.Tel.Tracer()

	requireNested(t, rec, tracer, log, bound, "postgres orders", func(ctx context.Context) error {
		_, err := d.Orders.Get(ctx, "o1")
		return err
	})
	requireNested(t, rec, tracer, log, bound, "postgres notes", func(ctx context.Context) error {
		_, err := d.Notes.List(ctx, document.Query{})
		return err
	})
	requireNested(t, rec, tracer, log, bound, "postgres hits", func(ctx context.Context) error {
		_, err := d.Counter.Add(ctx, "views", 1)
		return err
	})
	// Inside a unit the unit's BEGIN and COMMIT run under the unit's span;
	// the read's statement under the read's.
	ctx, caller := tracer.Start(bound, "caller")
	err = d.C.InTx(ctx, func(ctx context.Context) error {
		_, err := d.Orders.Get(ctx, "o1")
		return err
	})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	var read trace.SpanContext
	for _, s := range rec.Ended() {
		if s.Name() == "postgres orders" && s.SpanContext().TraceID() == caller.SpanContext().TraceID() {
			read = s.SpanContext()
		}
	}
	selects := 0
	for _, op := range log.in(caller.SpanContext().TraceID()) {
		if strings.Contains(op.what, orders) {
			selects++
			if op.sc.SpanID() != read.SpanID() {
				t.Errorf("unit: %q ran under span %s, want the read's %s", op.what, op.sc.SpanID(), read.SpanID())
			}
		}
	}
	if selects != 1 {
		t.Errorf("unit: the driver saw %d statements on %s, want 1", selects, orders)
	}
}

// TestDriverSpansNestUnderRedisRouteSpans: every command a Redis route
// call sends reaches go-redis's hooks with a context carrying the call's
// route span, so redisotel's spans are its children: a tagged cache
// read, a namespace cache write, a counter, a lock's release (a script:
// EVALSHA), a stream read in a group (XGROUP CREATE, then XREADGROUP) and
// a publish.
func TestDriverSpansNestUnderRedisRouteSpans(t *testing.T) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	log := &driverLog{}
	cl := goredis.NewClient(&goredis.Options{Addr: testsvc.RedisAddr(t)})
	cl.AddHook(log)
	t.Cleanup(func() { _ = cl.Close() })
	rec := tracetest.NewSpanRecorder()
	var d struct {
		fx.In
		Cache   *redis.Cache   `name:"cache"`
		NS      *redis.Cache   `name:"ns"`
		Counter *redis.Counter `name:"counter"`
		Locks   *redis.Locks   `name:"locks"`
		PubSub  *redis.PubSub  `name:"pubsub"`
		Tel     *telemetry.Telemetry
	}
	var stream *redis.Stream // its route is named per run: its key (and group) outlive the calls
	tagged := redis.RouteConfig{TenantAware: true}
	app := fx.New(fx.NopLogger,
		tenantotel.Module(tenantotel.Config{SpanProcessors: []sdktrace.SpanProcessor{rec}, NoMetricsRoute: true}),
		redis.Module("kv", redis.Use(cl),
			redis.CacheRoute("cache", tagged),
			redis.CacheRoute("ns", redis.RouteConfig{Namespace: naming.PerTenant("nest" + suffix)}),
			redis.CounterRoute("counter", tagged),
			redis.LockRoute("locks", tagged),
			redis.StreamRoute("st"+suffix, tagged),
			redis.PubSubRoute("pubsub", tagged)),
		fx.Populate(&d), named("st"+suffix, &stream),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	bound := tenancy.WithTenant(context.Background(), tenantA)
	t.Cleanup(func() {
		_, _ = d.Cache.Delete(bound, "k"+suffix)
		_, _ = d.NS.Delete(bound, "k")
		_, _ = d.Counter.Delete(bound, "n"+suffix)
	})
	if err := d.Cache.Set(bound, "k"+suffix, []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	lease, err := d.Locks.Acquire(bound, "l"+suffix, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tracer := d.Tel.Tracer()

	requireNested(t, rec, tracer, log, bound, "redis cache", func(ctx context.Context) error {
		_, _, err := d.Cache.Get(ctx, "k"+suffix)
		return err
	})
	requireNested(t, rec, tracer, log, bound, "redis ns", func(ctx context.Context) error {
		return d.NS.Set(ctx, "k", []byte("v"), time.Minute)
	})
	requireNested(t, rec, tracer, log, bound, "redis counter", func(ctx context.Context) error {
		_, err := d.Counter.Add(ctx, "n"+suffix, 1)
		return err
	})
	requireNested(t, rec, tracer, log, bound, "redis locks", lease.Release)
	group := "g" + suffix
	requireNested(t, rec, tracer, log, bound, "redis st"+suffix, func(ctx context.Context) error {
		_, err := stream.ReadGroup(ctx, group, "c", 1, 0)
		return err
	})
	requireNested(t, rec, tracer, log, bound, "redis pubsub", func(ctx context.Context) error {
		_, err := d.PubSub.Publish(ctx, "ch"+suffix, []byte("x"))
		return err
	})
	t.Cleanup(func() {
		if keys, err := cl.Keys(context.Background(), "*st"+suffix+"*").Result(); err == nil && len(keys) > 0 {
			_ = cl.Del(context.Background(), keys...).Err()
		}
	})
}
