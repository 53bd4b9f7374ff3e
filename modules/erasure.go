package modules

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// VerifyErasure runs every module's verifier for tenant, removing
// nothing: what Offboard ends with, for a tenant offboarded by
// OffboardAll (which does not verify: a scan per tenant would cost what
// its one pass for many tenants saves) or to audit an offboarding later.
// Every line says what its module checked and what is left; anything of
// the tenant left is tenant_erasure_incomplete.
func (t *Tenants) VerifyErasure(ctx context.Context, tenant tenancy.ID) (Report, error) {
	if tenant.IsZero() {
		return nil, tenancy.Unbound()
	}
	rep := t.each(tenant, t.mayHold, func(s *TenantState) (string, error) {
		if s.Verify == nil {
			return SkippedNothingToVerify, nil
		}
		return "", nil
	})
	t.verify(ctx, tenant, rep)
	return rep, rep.Err()
}

// SkippedNothingToVerify is a VerifyErasure line's reason for a module
// that declares no family it can scan.
const SkippedNothingToVerify = "the module declares nothing it can scan for a tenant"

// verify runs every module's verifier after a teardown, filling each
// module's line of rep: what it checked, what is left, what it cannot
// remove, when it ended, and tenant_erasure_incomplete when anything of
// tenant is left.
func (t *Tenants) verify(ctx context.Context, tenant tenancy.ID, rep Report) {
	for i, s := range t.states {
		if s.Verify == nil || rep[i].Skipped != "" {
			continue
		}
		e, err := s.Verify(ctx, tenant)
		rep[i].Ended = time.Now()
		rep[i].Checked, rep[i].Left, rep[i].Kept = e.Checked, e.Left, e.Kept
		if err != nil {
			rep[i].Err = fmt.Errorf("verifying the erasure: %w", err)
			continue
		}
		if len(e.Left) > 0 {
			rep[i].Err = ErasureIncomplete(s.Module, s.Backend, tenant, e.Left)
		}
	}
}

// ErasureIncomplete is tenant_erasure_incomplete for the families of
// module in which its verifier still found tenant's data after the
// teardown.
func ErasureIncomplete(module, backend string, tenant tenancy.ID, left []Leftover) error {
	parts := make([]string, 0, len(left))
	for _, l := range left {
		p := fmt.Sprintf("family %q (%s at %s", l.Family.Name, l.Family.Kind, l.Family.Where)
		if l.Family.Route != "" {
			p += ", route " + l.Family.Route
		}
		p += fmt.Sprintf("): %d left", l.Count)
		if l.Sample != "" {
			p += ", e.g. " + l.Sample
		}
		parts = append(parts, p)
	}
	route := ""
	if len(left) == 1 {
		route = left[0].Family.Route
	}
	return &tenancy.Error{
		Code: tenancy.CodeTenantErasureIncomplete, Module: module, Backend: backend, Route: route,
		Detail: fmt.Sprintf("after the teardown tenant %s still has data in: %s; the tenant stays suspended", tenant, strings.Join(parts, "; ")),
		Fix: "a writer the teardown does not know wrote there (declare its family in the backend's inventory so the teardown removes it), " +
			"or a call wrote after the teardown (a replica not fenced by LifecycleWith); run the offboard again to remove what the teardown knows",
	}
}
