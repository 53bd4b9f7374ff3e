package tenancytest

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Erased checks offboarding on the probe's route: with A's and B's
// records written (A's may be the boundary probe's), Tenants.Offboard(A) succeeds, its verifiers check at
// least one family and find nothing left, VerifyErasure agrees, and once
// A is resumed its record is gone while B's is still there. A is resumed
// at the end.
func Erased(t testing.TB, p Probe) {
	t.Helper()
	if p.Tenants == nil {
		t.Fatal("tenancytest.Erased: Probe.Tenants is nil; build the cell's app with modules.Lifecycle() and its module with AllowTeardown, and set Probe.Tenants")
	}
	if p.A.IsZero() {
		p.A = TenantA
	}
	if p.B.IsZero() {
		p.B = TenantB
	}
	ctxA := tenancy.WithTenant(context.Background(), p.A)
	ctxB := tenancy.WithTenant(context.Background(), p.B)
	// The boundary probe may have written A's record already.
	for _, ctx := range []context.Context{ctxA, ctxB} {
		if ok, err := p.Read(ctx); err == nil && ok && !p.Delivered {
			continue
		}
		if err := p.Write(ctx); err != nil {
			t.Fatalf("offboarding check: write: %v", err)
		}
	}
	if p.Cleanup != nil {
		t.Cleanup(func() { _ = p.Cleanup(ctxB) })
	}
	rep, err := p.Tenants.Offboard(context.Background(), p.A)
	if err != nil {
		t.Fatalf("offboarding A: %v", err)
	}
	checked := 0
	for _, l := range rep {
		checked += len(l.Checked)
	}
	if checked == 0 {
		t.Errorf("offboarding A: no module's verifier checked anything (report %+v): declare the route's families and set TenantState.Verify", rep)
	}
	if _, err := p.Tenants.VerifyErasure(context.Background(), p.A); err != nil {
		t.Errorf("VerifyErasure after offboarding A: %v", err)
	}
	p.Tenants.Resume(p.A)
	if p.Delivered {
		return
	}
	if ok, err := p.Read(ctxA); err != nil || ok {
		t.Errorf("A's record after offboarding A: visible=%v err=%v, want gone", ok, err)
	}
	if ok, err := p.Read(ctxB); err != nil || !ok {
		t.Errorf("B's record after offboarding A: visible=%v err=%v, want kept", ok, err)
	}
}

// RequireVerified fails t unless every line of rep of backend (an
// Offboard's or VerifyErasure's report) checked at least one family and
// found nothing of the tenant left.
func RequireVerified(t testing.TB, rep modules.Report, backend string) {
	t.Helper()
	for _, m := range rep {
		if m.Backend == backend && (len(m.Checked) == 0 || len(m.Left) != 0) {
			t.Errorf("the verifier of %s (%s): checked %+v, left %+v", m.Module, backend, m.Checked, m.Left)
		}
	}
}
