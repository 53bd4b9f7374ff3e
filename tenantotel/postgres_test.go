package tenantotel_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantotel"
)

// pgSpans is a PostgreSQL module traced into rec: a tagged document
// route over a shared table and a confined dynamic read, tenant A
// provisioned.
type pgSpans struct {
	rec    *tracetest.SpanRecorder
	tracer trace.Tracer
	c      *postgres.Client
	orders *postgres.Documents[order]
	dyn    *postgres.DynamicRead
}

func pgTraced(t *testing.T) pgSpans {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	dsn := testsvc.PostgresURL(t)
	p := pgSpans{rec: tracetest.NewSpanRecorder()}
	var d struct {
		fx.In
		C      *postgres.Client           `name:"shop"`
		Orders *postgres.Documents[order] `name:"orders"`
		Dyn    *postgres.DynamicRead      `name:"dyn"`
		Tel    *telemetry.Telemetry
	}
	app := fx.New(fx.NopLogger,
		tenantotel.Module(tenantotel.Config{Telemetry: telemetry.Config{SpanTenant: telemetry.TenantRaw},
			SpanProcessors: []sdktrace.SpanProcessor{p.rec}, NoMetricsRoute: true}),
		postgres.Module("shop", postgres.Connect(dsn), postgres.SchemaPrefix("twspan"+suffix+"_"), modules.AllowTeardown(),
			postgres.Document[order]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("span_orders_" + suffix)}),
			postgres.DynamicReadRoute("dyn", postgres.DynamicReadConfig{PerTenantSchema: true, TenantRole: true})),
		fx.Populate(&d),
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.c, p.orders, p.dyn, p.tracer = d.C, d.Orders, d.Dyn, d.Tel.Tracer()
	t.Cleanup(func() {
		_ = p.c.Teardown(context.Background(), tenantA)
		_ = app.Stop(context.Background())
		if conn, err := pgx.Connect(context.Background(), dsn); err == nil {
			_, _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{"span_orders_" + suffix}.Sanitize())
			_ = conn.Close(context.Background())
		}
	})
	if err := p.c.Provision(context.Background(), tenantA); err != nil {
		t.Fatal(err)
	}
	return p
}

// spansNamed are the ended spans of that name, oldest first.
func (p pgSpans) spansNamed(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range p.rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// TestDynamicReadIsASpan: a PostgreSQL dynamic read is a route span like
// every other route's (module, route, kind, tier, tenant), a child of the
// caller's span, and its refusals are recorded with their codes:
// tenant_unbound, postgres_dynamic_read_wrote (text that wrote), and
// postgres_unit_of_work_refused inside a unit of work. The compiled
// text's own error is the driver instrumentation's: the span is not
// failed by it.
func TestDynamicReadIsASpan(t *testing.T) {
	p := pgTraced(t)
	bound := tenancy.WithTenant(context.Background(), tenantA)
	read := func(ctx context.Context, text string) error {
		return p.dyn.Query(ctx, text, nil, func(r pgx.Rows) error {
			for r.Next() {
			}
			return r.Err()
		})
	}
	ctx, parent := p.tracer.Start(bound, "caller")
	err := read(ctx, "SELECT 1")
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	if err := read(context.Background(), "SELECT 1"); !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Fatalf("unbound read: %v", err)
	}
	if err := read(bound, "SELECT pg_catalog.lo_from_bytea(0, 'x')"); !errors.Is(err, postgres.CodeDynamicReadWrote) {
		t.Fatalf("writing read: %v", err)
	}
	if err := read(bound, "SELECT FROM no_such_table"); err == nil || tenancy.CodeOf(err) != "" {
		t.Fatalf("failing text: %v", err)
	}
	if err := p.c.InTx(bound, func(ctx context.Context) error { return read(ctx, "SELECT 1") }); !errors.Is(err, postgres.CodeUnitOfWorkRefused) {
		t.Fatalf("read inside a unit: %v", err)
	}

	spans := p.spansNamed("postgres dyn")
	if len(spans) != 5 {
		t.Fatalf("%d dynamic read spans, want 5: %s", len(spans), names(p.rec.Ended()))
	}
	ok := spans[0]
	a := attrs(ok)
	if a[telemetry.AttrModule] != "shop" || a[telemetry.AttrRoute] != "dyn" || a[telemetry.AttrKind] != "dynamic_read" ||
		a[telemetry.AttrTier] != "namespace" || a[telemetry.AttrBackend] != "postgres" || a[telemetry.AttrTenant] != tenantA.String() ||
		a[telemetry.AttrErrorCode] != "" {
		t.Errorf("dynamic read span: %v", a)
	}
	if ok.Parent().SpanID() != parent.SpanContext().SpanID() || ok.SpanKind() != trace.SpanKindClient {
		t.Errorf("dynamic read span: parent %s kind %s, want the caller's %s, client", ok.Parent().SpanID(), ok.SpanKind(), parent.SpanContext().SpanID())
	}
	for i, want := range []string{"", string(tenancy.CodeTenantUnbound), string(postgres.CodeDynamicReadWrote), "", string(postgres.CodeUnitOfWorkRefused)} {
		if got := attrs(spans[i])[telemetry.AttrErrorCode]; got != want {
			t.Errorf("span %d: code %q, want %q", i, got, want)
		}
	}
	units := p.spansNamed(telemetry.UnitSpan)
	if len(units) != 1 || spans[4].Parent().SpanID() != units[0].SpanContext().SpanID() {
		t.Errorf("the refused read inside the unit is not the unit's child: %s", names(p.rec.Ended()))
	}
}

// TestInTxIsOneSpan: postgres.Client.InTx is one span, tenantwire.unit,
// with the module, backend, tenant and outcome, the route calls inside it
// its children. A commit is outcome commit; a function's error rolls back
// and is recorded with its code; a transaction inside that rolled back
// while the function returned nil is a rollback with
// postgres_unit_of_work_rolled_back; a panic is a rollback; a unit
// refused at its entry is outcome error with its code.
func TestInTxIsOneSpan(t *testing.T) {
	p := pgTraced(t)
	bound := tenancy.WithTenant(context.Background(), tenantA)
	ctx, parent := p.tracer.Start(bound, "caller")
	err := p.c.InTx(ctx, func(ctx context.Context) error {
		if _, err := p.orders.Create(ctx, "o1", order{Qty: 1}); err != nil {
			return err
		}
		_, err := p.orders.Get(ctx, "o1")
		return err
	})
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	// Another tenant's call inside the unit is refused, and the function
	// returns that refusal.
	if err := p.c.InTx(bound, func(ctx context.Context) error {
		_, err := p.orders.Create(tenancy.WithTenant(ctx, tenantB), "o2", order{})
		return err
	}); !errors.Is(err, tenancy.CodeTenantScopeChanged) {
		t.Fatalf("unit with another tenant's call: %v", err)
	}
	if err := p.c.InTx(bound, func(ctx context.Context) error {
		_ = p.c.InTx(ctx, func(context.Context) error { return errors.New("nested failure") })
		return nil
	}); !errors.Is(err, postgres.CodeUnitOfWorkRolledBack) {
		t.Fatalf("unit with a failed nested unit: %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = p.c.InTx(bound, func(context.Context) error { panic("boom") })
	}()
	if err := p.c.InTx(context.Background(), func(context.Context) error { return nil }); !errors.Is(err, tenancy.CodeTenantUnbound) {
		t.Fatalf("unbound unit: %v", err)
	}

	units := p.spansNamed(telemetry.UnitSpan)
	if len(units) != 5 {
		t.Fatalf("%d unit spans, want 5 (a nested InTx joins its unit): %s", len(units), names(p.rec.Ended()))
	}
	commit := units[0]
	a := attrs(commit)
	if a[telemetry.AttrModule] != "shop" || a[telemetry.AttrBackend] != "postgres" || a[telemetry.AttrTenant] != tenantA.String() ||
		a[telemetry.AttrUnitOutcome] != telemetry.OutcomeCommit || a[telemetry.AttrErrorCode] != "" {
		t.Errorf("committed unit span: %v", a)
	}
	if commit.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("the unit span is not a child of the caller's span")
	}
	inside := 0
	for _, s := range p.spansNamed("postgres orders") {
		if s.Parent().SpanID() == commit.SpanContext().SpanID() {
			inside++
		}
	}
	if inside != 2 {
		t.Errorf("%d route spans are the committed unit's children, want 2 (Create, Get)", inside)
	}
	for i, want := range []struct{ outcome, code string }{
		{telemetry.OutcomeCommit, ""},
		{telemetry.OutcomeRollback, string(tenancy.CodeTenantScopeChanged)},
		{telemetry.OutcomeRollback, string(postgres.CodeUnitOfWorkRolledBack)},
		{telemetry.OutcomeRollback, telemetry.CodeUncoded},
		{telemetry.OutcomeError, string(tenancy.CodeTenantUnbound)},
	} {
		a := attrs(units[i])
		if a[telemetry.AttrUnitOutcome] != want.outcome || a[telemetry.AttrErrorCode] != want.code {
			t.Errorf("unit %d: outcome %q code %q, want %q %q", i, a[telemetry.AttrUnitOutcome], a[telemetry.AttrErrorCode], want.outcome, want.code)
		}
	}
	if _, ok := attrs(units[4])[telemetry.AttrTenant]; ok {
		t.Errorf("the unbound unit names a tenant: %v", attrs(units[4]))
	}
}
