package modules_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// spans records the names of the spans started.
type spans struct {
	noop.TracerProvider
	mu    *sync.Mutex
	names *[]string
}

func (s spans) Tracer(string, ...trace.TracerOption) trace.Tracer { return spanTracer{s: s} }

type spanTracer struct {
	noop.Tracer
	s spans
}

func (t spanTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.s.mu.Lock()
	*t.s.names = append(*t.s.names, name)
	t.s.mu.Unlock()
	return t.Tracer.Start(ctx, name, opts...)
}

// TestGateBindsRefusesAndTraces: a tenant-scoped route's gate gives the
// bound tenant, refuses no tenant with tenant_unbound and a suspended one
// with tenant_suspended (each naming backend, module and route), serves
// the tenant again after resume, and starts a span for every call, the
// refused ones included.
func TestGateBindsRefusesAndTraces(t *testing.T) {
	rules := floors.Backend{Name: "toy", Ceiling: tenancy.Namespace, Kinds: map[floors.Kind]floors.KindRule{"kv": {Relations: []string{"keys"}}}}
	var names []string
	tel, err := telemetry.New(telemetry.Config{TracerProvider: spans{mu: &sync.Mutex{}, names: &names}})
	if err != nil {
		t.Fatal(err)
	}
	susp := &modules.Suspensions{}
	g := modules.NewGate(modules.LifecycleIn{Suspensions: susp, Telemetry: tel}, rules, "m",
		floors.Route{Name: "r", Kind: "kv", TenantAware: true, Relations: []floors.Relation{{Role: "keys", Name: "k"}}})
	if !g.Decision.NeedsTenant || !g.Decision.Tagged {
		t.Fatalf("decision %+v", g.Decision)
	}
	a := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	_, id, end, err := g.Enter(a)
	if err != nil || id != tenancytest.TenantA {
		t.Fatalf("bound call: %v %v", id, err)
	}
	end(nil)
	_, _, _, err = g.Enter(context.Background())
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantUnbound, "toy", "m", "r")
	susp.Suspend(tenancytest.TenantA)
	_, _, end, err = g.Enter(a)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantSuspended, "toy", "m", "r")
	if end != nil {
		t.Error("a refused call handed back an end to call")
	}
	if _, _, _, err := g.Enter(tenancy.WithTenant(context.Background(), tenancytest.TenantB)); err != nil {
		t.Errorf("B while A is suspended: %v", err)
	}
	susp.Resume(tenancytest.TenantA)
	if _, _, _, err := g.Enter(a); err != nil {
		t.Errorf("A after resume: %v", err)
	}
	if len(names) != 5 || names[0] != "toy r" {
		t.Errorf("spans %v, want one \"toy r\" per call", names)
	}
}

// TestGateHoldsTheCallInFlight: a call entered through a Gate is in
// flight until its end, so an Offboard's drain of its tenant waits for
// it (tenant_drain_timeout while it runs) and passes once it ended. A
// gate that only checked the suspension let the teardown run under it.
func TestGateHoldsTheCallInFlight(t *testing.T) {
	rules := floors.Backend{Name: "toy", Ceiling: tenancy.Namespace, Kinds: map[floors.Kind]floors.KindRule{"kv": {Relations: []string{"keys"}}}}
	susp := &modules.Suspensions{}
	g := modules.NewGate(modules.LifecycleIn{Suspensions: susp}, rules, "m",
		floors.Route{Name: "r", Kind: "kv", TenantAware: true, Relations: []floors.Relation{{Role: "keys", Name: "k"}}})
	_, _, end, err := g.Enter(tenancy.WithTenant(context.Background(), tenancytest.TenantA))
	if err != nil {
		t.Fatal(err)
	}
	susp.Suspend(tenancytest.TenantA)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_ = tenancytest.RequireCode(t, susp.Drain(ctx, tenancytest.TenantA), tenancy.CodeTenantDrainTimeout, "", "modules", "offboard")
	end(nil)
	if err := susp.Drain(context.Background(), tenancytest.TenantA); err != nil {
		t.Fatalf("drain after the call ended: %v", err)
	}
}
