package tenancytest

import (
	"context"
	"errors"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Suspended suspends tenant A through p.Suspensions after Boundary wrote
// A's record, and asserts every call the probe sets for A (write, read,
// list, count, search) refuses it with a *tenancy.Error of code
// tenant_suspended naming module, backend and route with a fix, while B
// is still served; then resumes A and asserts A is served again: it reads
// its record, intact, or, for a Delivered probe, writes again. A
// Delivered read is left out: it is no call to refuse; so are Update and
// Delete, which a probe writes as B's attempts (FailsClosed leaves them
// out too).
func Suspended(t testing.TB, p Probe) {
	t.Helper()
	if p.Suspensions == nil {
		t.Fatal("tenancytest.Suspended: Probe.Suspensions is nil; supply a *modules.Suspensions to the cell's app " +
			"(s := &modules.Suspensions{}; fx.Supply(s)) and set Probe.Suspensions to it")
	}
	if p.A.IsZero() {
		p.A = TenantA
	}
	if p.B.IsZero() {
		p.B = TenantB
	}
	ctxA := tenancy.WithTenant(context.Background(), p.A)
	ctxB := tenancy.WithTenant(context.Background(), p.B)
	p.Suspensions.Suspend(p.A)
	resumed := false
	defer func() {
		if !resumed {
			p.Suspensions.Resume(p.A)
		}
	}()
	for _, op := range p.calls(false) {
		if op.name == "read" && p.Delivered {
			continue
		}
		err := op.call(ctxA)
		var coded *tenancy.Error
		switch {
		case err == nil:
			t.Errorf("%s under suspended A succeeded: want tenant_suspended", op.name)
		case !errors.As(err, &coded) || coded.Code != tenancy.CodeTenantSuspended:
			t.Errorf("%s under suspended A: %v, want a *tenancy.Error with code tenant_suspended", op.name, err)
		case coded.Fix == "":
			t.Errorf("%s under suspended A: tenant_suspended without a fix text: %v", op.name, err)
		case coded.Module == "" || coded.Backend == "" || coded.Route == "":
			t.Errorf("%s under suspended A: tenant_suspended names module=%q backend=%q route=%q; want all three",
				op.name, coded.Module, coded.Backend, coded.Route)
		}
	}
	if !p.Delivered {
		if _, err := p.Read(ctxB); err != nil {
			t.Errorf("read under B while A is suspended: %v; a suspension is A's alone", err)
		}
	}
	p.Suspensions.Resume(p.A)
	resumed = true
	if !p.Delivered {
		requireVisible(t, "A after resume", ctxA, p, true)
	}
	if p.Intact != nil {
		ok, err := p.Intact(ctxA)
		must(t, "intact under A after resume", err)
		if !ok {
			t.Error("A's record changed while A was suspended")
		}
	}
	if p.Delivered {
		// Nothing to read back: a write is what shows A served again.
		must(t, "write under A after resume", p.Write(ctxA))
	}
}
