package tenancytest

import (
	"errors"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// RequireUnbound fails the test unless err is a tenant_unbound
// *tenancy.Error naming the given module, backend and route: the fields
// every adapter fills on a call refused for want of a bound tenant.
func RequireUnbound(t testing.TB, err error, module, backend, route string) {
	t.Helper()
	var e *tenancy.Error
	if !errors.As(err, &e) || e.Code != tenancy.CodeTenantUnbound {
		t.Fatalf("got %v, want tenant_unbound", err)
		return
	}
	if e.Module != module || e.Backend != backend || e.Route != route {
		t.Errorf("tenant_unbound names module=%q backend=%q route=%q, want %q %q %q",
			e.Module, e.Backend, e.Route, module, backend, route)
	}
}
