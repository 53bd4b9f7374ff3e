package tenantotel_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/baggage"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/shards"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantotel"
)

// clientBaggage is the context a handler of tenant A's request has when
// the client sent its own tenantwire.tenant member naming B (as it was
// before the boundary dropped it, or as a context built by hand has it).
func clientBaggage(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	b, err := baggage.Parse(telemetry.BaggageTenant + "=" + tenantB.String() + ",keep=1")
	if err != nil {
		t.Fatal(err)
	}
	return baggage.ContextWithBaggage(tenancy.WithTenant(ctx, tenantA), b)
}

// TestPostgresOutboxStoresOnlyItsOwnTraceContext: on the real PostgreSQL
// outbox, a row written under a context carrying a client's
// tenantwire.tenant member, and a row whose own baggage header names one,
// are stored and relayed with the write's trace context and without that
// member (with Config.Baggage off), or with the bound tenant's member
// (with it on); other members are kept.
func TestPostgresOutboxStoresOnlyItsOwnTraceContext(t *testing.T) {
	for _, asked := range []bool{false, true} {
		var b [4]byte
		_, _ = rand.Read(b[:])
		table := "bag_out_" + hex.EncodeToString(b[:])
		dsn := testsvc.PostgresURL(t)
		got := make(chan outbox.Message, 4)
		rec := tracetest.NewSpanRecorder()
		var d struct {
			fx.In
			C   *postgres.Client `name:"pg"`
			O   *postgres.Outbox `name:"out"`
			Tel *telemetry.Telemetry
		}
		app := fx.New(fx.NopLogger,
			tenantotel.Module(tenantotel.Config{Telemetry: telemetry.Config{SpanTenant: telemetry.TenantRaw, Baggage: asked},
				SpanProcessors: []sdktrace.SpanProcessor{rec}, NoMetricsRoute: true}),
			postgres.Module("pg", postgres.Connect(dsn),
				postgres.OutboxRoute("out", postgres.OutboxConfig{Table: naming.Shared(table)}),
				postgres.Relay("out", postgres.RelayConfig{Idle: 10 * time.Millisecond,
					Destination: outbox.DestinationFunc(func(_ context.Context, m outbox.Message) error { got <- m; return nil }), WorkerConfig: shards.WorkerConfig{Backoff: 10 * time.Millisecond}})),
			fx.Populate(&d))
		if err := app.Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if conn, err := pgx.Connect(context.Background(), dsn); err == nil {
				_, _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize())
				_ = conn.Close(context.Background())
			}
		})
		if err := d.C.Provision(context.Background(), tenantA); err != nil {
			t.Fatal(err)
		}
		ctx, parent := d.Tel.Tracer().Start(clientBaggage(t, context.Background()), "request")
		err := d.O.Write(ctx, outbox.Message{EventID: "e1", Topic: "t"},
			outbox.Message{EventID: "e2", Topic: "t", Headers: map[string]string{"baggage": telemetry.BaggageTenant + "=" + tenantB.String() + ",mine=2"}})
		parent.End()
		if err != nil {
			t.Fatal(err)
		}
		stored := map[string]map[string]string{}
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(context.Background(), "SELECT event_id, headers FROM "+pgx.Identifier{table}.Sanitize())
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			var h map[string]string
			if err := rows.Scan(&id, &h); err != nil {
				t.Fatal(err)
			}
			stored[id] = h
		}
		rows.Close()
		_ = conn.Close(context.Background())
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		relayed := map[string]map[string]string{}
		for len(relayed) < 2 {
			select {
			case m := <-got:
				relayed[m.EventID] = m.Headers
			case <-time.After(5 * time.Second):
				t.Fatalf("relayed %v, want e1 and e2", relayed)
			}
		}
		_ = app.Stop(context.Background())
		want := map[string]string{"e1": "keep=1", "e2": "mine=2"}
		if asked {
			want["e1"] = "keep=1," + telemetry.BaggageTenant + "=" + tenantA.String()
		}
		for _, where := range []map[string]map[string]string{stored, relayed} {
			for id, h := range where {
				checkRowBaggage(t, asked, id, h, want[id])
				if sc := d.Tel.Extract(h); sc.TraceID() != parent.SpanContext().TraceID() || sc.SpanID() == parent.SpanContext().SpanID() {
					t.Errorf("baggage %v, row %s: trace context %v is not the write's own span under the caller's trace", asked, id, h)
				}
			}
		}
	}
}

// checkRowBaggage: the row's baggage header holds exactly the members of
// want (in any order), never the client's tenantwire.tenant.
func checkRowBaggage(t *testing.T, asked bool, id string, h map[string]string, want string) {
	t.Helper()
	gb, err := baggage.Parse(h["baggage"])
	wb, _ := baggage.Parse(want)
	if err != nil || gb.Len() != wb.Len() {
		t.Errorf("baggage %v, row %s: baggage header %q, want %q", asked, id, h["baggage"], want)
		return
	}
	for _, m := range wb.Members() {
		if gb.Member(m.Key()).Value() != m.Value() {
			t.Errorf("baggage %v, row %s: baggage header %q, want %q", asked, id, h["baggage"], want)
		}
	}
}
