package floors_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// An unbound worker over a tenant-scoped route is refused with the tier it
// needs (the route's), not "none", and a fix naming the worker and the route.
func TestTenantGlobalRequiredReportsNeededTier(t *testing.T) {
	m := floors.Module{Name: "msg", Backend: postgresLike(), Routes: []floors.Route{
		{Name: "aware_outbox", Kind: "outbox", TenantAware: true},
		{Name: "routed_outbox", Kind: "outbox", Routed: true},
		{Name: "per_tenant_docs", Kind: "document", Relations: []floors.Relation{
			{Role: "read", PerTenant: true}, {Role: "write", PerTenant: true}, {Role: "history", PerTenant: true}}},
	}}
	for route, want := range map[string]tenancy.Tier{
		"aware_outbox": tenancy.Tagged, "routed_outbox": tenancy.Dedicated, "per_tenant_docs": tenancy.Namespace,
	} {
		t.Run(route, func(t *testing.T) {
			rep := floors.Check([]floors.Module{m}, []floors.Worker{{Name: "relay", Module: "msg", Route: route, Binding: floors.PerRow}})
			var e *tenancy.Error
			if !errors.As(errors.Join(rep.Errors...), &e) || e.Code != tenancy.CodeTenantGlobalRequired {
				t.Fatalf("errors %v", rep.Errors)
			}
			if e.Required != want || e.Reached != tenancy.None {
				t.Errorf("reached=%s required=%s, want reached=none required=%s", e.Reached, e.Required, want)
			}
			msg := e.Error()
			for _, s := range []string{"required=" + want.String(), `run worker "relay" sharded`, `make route "` + route + `" tenant-global`} {
				if !strings.Contains(msg, s) {
					t.Errorf("%q lacks %q", msg, s)
				}
			}
			if strings.Contains(msg, "required=none") {
				t.Errorf("%q reports required=none", msg)
			}
		})
	}
}

// The connection-budget fix gives the numbers to reach.
func TestConnectionBudgetFixNamesNumbers(t *testing.T) {
	m := floors.Module{Name: "pg", Backend: postgresLike(), ConnBudget: 16, WorstCaseConns: 40}
	rep := floors.Check([]floors.Module{m}, nil)
	var e *tenancy.Error
	if !errors.As(errors.Join(rep.Errors...), &e) || e.Code != tenancy.CodeConnectionBudgetExceeded {
		t.Fatalf("errors %v", rep.Errors)
	}
	if !strings.Contains(e.Fix, "at most 16") || !strings.Contains(e.Fix, "budget to 40") {
		t.Errorf("fix %q", e.Fix)
	}
}
