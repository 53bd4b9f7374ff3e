package mongo_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/mongo"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancytest"
)

type note item

// commandLog records the span context of each command's context, as the
// driver's own instrumentation (otelmongo, a command monitor) sees it:
// that span is the parent of the span it starts.
type commandLog struct {
	mu   sync.Mutex
	cmds []loggedCommand
}

type loggedCommand struct {
	name string
	sc   trace.SpanContext
}

func (l *commandLog) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(ctx context.Context, e *event.CommandStartedEvent) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.cmds = append(l.cmds, loggedCommand{e.CommandName, trace.SpanContextFromContext(ctx)})
	}}
}

// in returns the commands recorded in trace id.
func (l *commandLog) in(id trace.TraceID) []loggedCommand {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []loggedCommand
	for _, c := range l.cmds {
		if c.sc.TraceID() == id {
			out = append(out, c)
		}
	}
	return out
}

// TestDriverSpansNestUnderRouteSpans: every command a MongoDB route call
// sends reaches the driver's command monitor with a context carrying the
// call's route span, so otelmongo's spans are its children, not its
// siblings under the caller's span: a tagged document read, a tagged
// update that misses (UpdateOne, then the count that tells why), a list
// in the tenant's own collection (namespace), and a counter.
func TestDriverSpansNestUnderRouteSpans(t *testing.T) {
	log := &commandLog{}
	c, err := driver.Connect(options.Client().ApplyURI(uriA).SetTimeout(30 * time.Second).SetMonitor(log.monitor()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var (
		items *mongo.Documents[item]
		notes *mongo.Documents[note] // a type of its own: a module provides one route per type
		hits  *mongo.Counter
	)
	start(t, mongo.Module("m", mongo.Use(c), mongo.Database(freshName()),
		mongo.Document[item]("items", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("items")}),
		mongo.Document[note]("notes", mongo.RouteConfig{Collection: naming.PerTenant("notes")}),
		mongo.CounterRoute("hits", mongo.RouteConfig{TenantAware: true, Collection: naming.Shared("hits")})),
		telemetry.Provide(telemetry.Config{TracerProvider: tp}),
		fx.Populate(&items, &notes), named("hits", &hits))
	bound := ctxOf(tenancytest.TenantA)
	if _, err := items.Create(bound, "i1", item{"a", 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := notes.Create(bound, "n1", note{"b", 2}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		span string
		call func(context.Context) error
	}{
		{"mongodb items", func(ctx context.Context) error { _, err := items.Get(ctx, "i1"); return err }},
		{"mongodb items", func(ctx context.Context) error {
			_, err := items.Update(ctx, "i1", item{"a", 2}, 7)
			if errors.Is(err, document.ErrConflict) {
				return nil
			}
			return err
		}},
		{"mongodb notes", func(ctx context.Context) error { _, err := notes.List(ctx, document.Query{}); return err }},
		{"mongodb hits", func(ctx context.Context) error { _, err := hits.Add(ctx, "views", 1); return err }},
	} {
		ctx, caller := tp.Tracer("test").Start(bound, "caller")
		err := tc.call(ctx)
		caller.End()
		if err != nil {
			t.Fatalf("%s: %v", tc.span, err)
		}
		id := caller.SpanContext().TraceID()
		var route sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == tc.span && s.SpanContext().TraceID() == id {
				route = s
			}
		}
		if route == nil {
			t.Fatalf("%s: no route span in the call's trace", tc.span)
		}
		cmds := log.in(id)
		if len(cmds) == 0 {
			t.Fatalf("%s: the driver saw no command in the call's trace", tc.span)
		}
		for _, cmd := range cmds {
			if cmd.sc.SpanID() != route.SpanContext().SpanID() {
				t.Errorf("%s: %s ran under span %s, want the route span %s (the caller's is %s)",
					tc.span, cmd.name, cmd.sc.SpanID(), route.SpanContext().SpanID(), caller.SpanContext().SpanID())
			}
		}
	}
}
