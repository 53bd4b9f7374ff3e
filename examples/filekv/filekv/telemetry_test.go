package filekv_test

import (
	"context"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/examples/filekv/filekv"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// spans records the name of every span started.
type spans struct {
	noop.TracerProvider
	mu    *sync.Mutex
	names *[]string
}

func (s spans) Tracer(string, ...trace.TracerOption) trace.Tracer { return tracer{s: s} }

type tracer struct {
	noop.Tracer
	s spans
}

func (t tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.s.mu.Lock()
	*t.s.names = append(*t.s.names, name)
	t.s.mu.Unlock()
	return t.Tracer.Start(ctx, name, opts...)
}

// TestTelemetryAndSuspensionComeFromTheKit: filekv writes no telemetry
// and no suspension check of its own, yet with the app's telemetry every
// call, a refused one too, has its span, and a tenant suspended through
// the app's lifecycle is refused, naming filekv, the module and the route.
func TestTelemetryAndSuspensionComeFromTheKit(t *testing.T) {
	var names []string
	tel, err := telemetry.New(telemetry.Config{TracerProvider: spans{mu: &sync.Mutex{}, names: &names}})
	if err != nil {
		t.Fatal(err)
	}
	var tenants *modules.Tenants
	kv := start(t, filekv.Module("files", filekv.Dir(t.TempDir()), filekv.KV("probe", filekv.KVConfig{Keys: filekv.PerTenant("probe")})),
		fx.Supply(tel), modules.Lifecycle(), fx.Populate(&tenants))
	a := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if err := kv.Put(a, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	tenants.Suspend(tenancytest.TenantA)
	_, _, err = kv.Get(a, "k")
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantSuspended, "filekv", "files", "probe")
	tenants.Resume(tenancytest.TenantA)
	if _, ok, err := kv.Get(a, "k"); err != nil || !ok {
		t.Fatalf("after resume: %v %v", ok, err)
	}
	if len(names) != 3 || names[0] != "filekv probe" {
		t.Fatalf("spans %v, want one \"filekv probe\" per call", names)
	}
}
