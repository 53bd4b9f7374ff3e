package tenantotel_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	kafkago "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/kafka"
	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenanthttp"
	"github.com/tenantwire/tenantwire/tenantotel"
)

type order struct {
	Qty int `json:"qty"`
}

// handled is what the consumer's handler saw.
type handled struct {
	tenant tenancy.ID
	span   trace.SpanContext
}

// TestOneRequestIsOneStoryAcrossTheOutbox: a request through the HTTP
// boundary stores an order and an outbox row in one unit of work
// (PostgreSQL); the relay delivers the row to Kafka and a consumer handles
// it. The spans tell it: the request's server span, the unit of work's
// span under it, its two PostgreSQL route spans under that, the Kafka
// delivery span linked to the outbox write through the row's headers,
// and the consumer's span linked to the delivery through the record's
// headers, the tenant on each; the handler runs under the consumer's
// span with the tenant bound. TENANTWIRE_OBS_WALKTHROUGH=file
// writes the spans as docs/observability.md shows them.
func TestOneRequestIsOneStoryAcrossTheOutbox(t *testing.T) {
	dsn := testsvc.PostgresURL(t)
	broker := testsvc.KafkaBrokers(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	ordersTable, outboxTable, topic := "obs_orders_"+suffix, "obs_outbox_"+suffix, "tw-obs-"+suffix
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t.Cleanup(func() {
		if conn, err := pgx.Connect(context.Background(), dsn); err == nil {
			_, _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+ordersTable+", "+outboxTable)
			_ = conn.Close(context.Background())
		}
		c := &kafkago.Client{Addr: kafkago.TCP(broker), Timeout: 10 * time.Second}
		_, _ = c.DeleteTopics(context.Background(), &kafkago.DeleteTopicsRequest{Topics: []string{topic}})
		_, _ = c.DeleteGroups(context.Background(), &kafkago.DeleteGroupsRequest{GroupIDs: []string{topic}})
	})

	rec := tracetest.NewSpanRecorder()
	got := make(chan handled, 1)
	var d struct {
		fx.In
		Server   *tenanthttp.Server
		Shop     *postgres.Client `name:"shop"`
		Producer *kafka.Producer  `name:"orders"`
		Prov     *migrate.Runner  `name:"bus"`
	}
	deliver := outbox.DestinationFunc(func(ctx context.Context, m outbox.Message) error { return d.Producer.Deliver(ctx, m) })
	app := fx.New(fx.NopLogger,
		tenantotel.Module(tenantotel.Config{Telemetry: telemetry.Config{SpanTenant: telemetry.TenantRaw},
			SpanProcessors: []sdktrace.SpanProcessor{rec}}),
		postgres.Module("shop", postgres.Connect(dsn),
			postgres.Document[order]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(ordersTable)}),
			postgres.OutboxRoute("events", postgres.OutboxConfig{Table: naming.Shared(outboxTable)}),
			postgres.Relay("events", postgres.RelayConfig{Name: "events-relay", Destination: deliver, Idle: 20 * time.Millisecond, WorkerConfig: shards.WorkerConfig{Backoff: 20 * time.Millisecond}}),
		),
		kafka.Module("bus", kafka.Brokers(broker),
			kafka.ProducerRoute("orders", kafka.ProducerConfig{Topic: naming.Shared(topic)}),
			kafka.Consumer("orders-in", kafka.ConsumerConfig{
				Name: "orders-consumer", Group: topic, Topic: naming.Shared(topic), TenantFromHeaders: true, WorkerConfig: shards.WorkerConfig{Backoff: 50 * time.Millisecond},
				Handle: func(ctx context.Context, _ kafkago.Message) error {
					id, _ := tenancy.FromContext(ctx)
					got <- handled{id, trace.SpanContextFromContext(ctx)}
					return nil
				},
				DeadLetter: func(context.Context, kafkago.Message, error) error { return nil },
			})),
		tenanthttp.Module(tenanthttp.Config{TrustedProxy: true, TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0"}),
		tenanthttp.RouteWith("POST /orders/{id}", tenanthttp.Tenant, func(in struct {
			fx.In
			Shop   *postgres.Client           `name:"shop"`
			Orders *postgres.Documents[order] `name:"orders"`
			Events *postgres.Outbox           `name:"events"`
		}) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id := r.PathValue("id")
				err := in.Shop.InTx(r.Context(), func(ctx context.Context) error {
					if _, err := in.Orders.Create(ctx, id, order{Qty: 1}); err != nil {
						return err
					}
					return in.Events.Write(ctx, outbox.Message{Topic: "orders", Payload: []byte(id + " placed")})
				})
				if err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
				}
			})
		}),
		fx.Populate(&d),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if err := d.Shop.Provision(ctx, tenantA); err != nil {
		t.Fatal(err)
	}
	if err := d.Prov.ProvisionShared(ctx); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })

	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+d.Server.TenantAddr()+"/orders/o-1", nil)
	req.Header.Set(tenanthttp.DefaultHeader, tenantA.String())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /orders/o-1: %s %s", resp.Status, body)
	}
	var h handled
	select {
	case h = <-got:
	case <-ctx.Done():
		t.Fatal("the consumer never handled the record")
	}
	// The consumer's span ends once its handler has returned, the
	// delivery's once the broker acknowledged, which may be later.
	var spans []sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		spans = rec.Ended()
		if find(spans, "kafka orders-in") != nil && find(spans, "kafka orders") != nil {
			break
		}
	}

	server, unit := find(spans, "POST /orders/{id}"), find(spans, telemetry.UnitSpan)
	orders, events := find(spans, "postgres orders"), find(spans, "postgres events")
	delivery, consumer := find(spans, "kafka orders"), find(spans, "kafka orders-in")
	if server == nil || unit == nil || orders == nil || events == nil || delivery == nil || consumer == nil {
		t.Fatalf("spans: %s", names(spans))
	}
	if unit.Parent().SpanID() != server.SpanContext().SpanID() || attrs(unit)[telemetry.AttrUnitOutcome] != telemetry.OutcomeCommit {
		t.Errorf("the unit of work is not a committed child of the request span: %v", attrs(unit))
	}
	for _, s := range []sdktrace.ReadOnlySpan{orders, events} {
		if s.Parent().SpanID() != unit.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the unit of work's span", s.Name())
		}
	}
	if !linksTo(delivery, events) || delivery.SpanKind() != trace.SpanKindProducer {
		t.Errorf("the delivery span does not link to the outbox write's span: %v", delivery.Links())
	}
	if !linksTo(consumer, delivery) || consumer.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("the consumer span does not link to the delivery span: %v", consumer.Links())
	}
	for _, s := range []sdktrace.ReadOnlySpan{server, unit, orders, events, delivery, consumer} {
		if attrs(s)[telemetry.AttrTenant] != tenantA.String() {
			t.Errorf("%s: tenant %q", s.Name(), attrs(s)[telemetry.AttrTenant])
		}
	}
	if h.tenant != tenantA || h.span.SpanID() != consumer.SpanContext().SpanID() {
		t.Errorf("the handler ran under tenant %s and span %s, want %s and the consumer's span %s",
			h.tenant, h.span.SpanID(), tenantA, consumer.SpanContext().SpanID())
	}
	// The consumer's reader reports its lag: nothing left behind the one
	// record it handled.
	if m, ok := series(scrape(t, d.Server), "tenantwire_consumer_lag", map[string]string{"backend": "kafka", "module": "bus", "route": "orders-in"}); !ok || m.GetGauge().GetValue() != 0 {
		t.Errorf("consumer lag series: %v %v", m, ok)
	}
	if path := os.Getenv("TENANTWIRE_OBS_WALKTHROUGH"); path != "" {
		if err := os.WriteFile(path, []byte(walkthrough([]sdktrace.ReadOnlySpan{server, unit, orders, events, delivery, consumer})), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func find(spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

func linksTo(s, to sdktrace.ReadOnlySpan) bool {
	return slices.ContainsFunc(s.Links(), func(l sdktrace.Link) bool {
		return l.SpanContext.SpanID() == to.SpanContext().SpanID() && l.SpanContext.TraceID() == to.SpanContext().TraceID()
	})
}

// walkthrough prints spans as the in-memory exporter holds them: name,
// kind, ids, parent, links and attributes, in start order.
func walkthrough(spans []sdktrace.ReadOnlySpan) string {
	short := func(sc trace.SpanContext) string {
		if !sc.IsValid() {
			return "-"
		}
		return sc.TraceID().String()[:8] + "/" + sc.SpanID().String()[:8]
	}
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "%s  kind=%s  span=%s  parent=%s\n", s.Name(), s.SpanKind(), short(s.SpanContext()), short(s.Parent()))
		for _, l := range s.Links() {
			fmt.Fprintf(&b, "    link -> %s\n", short(l.SpanContext))
		}
		kvs := s.Attributes()
		slices.SortFunc(kvs, func(a, b2 attributeKV) int { return strings.Compare(string(a.Key), string(b2.Key)) })
		for _, kv := range kvs {
			fmt.Fprintf(&b, "    %s=%s\n", kv.Key, kv.Value.String())
		}
	}
	return b.String()
}

type attributeKV = attribute.KeyValue
