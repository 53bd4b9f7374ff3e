package tenancytest

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// RequireCode fails the test unless err is a *tenancy.Error with code, of
// backend, with a fix, naming module and route (each checked when not
// empty), and whose Detail holds every detail. It returns the error for
// further checks.
func RequireCode(t testing.TB, err error, code tenancy.Code, backend, module, route string, detail ...string) *tenancy.Error {
	t.Helper()
	var e *tenancy.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("got %v, want %s", err, code)
		return nil
	}
	if e.Backend != backend || (module != "" && e.Module != module) || (route != "" && e.Route != route) {
		t.Fatalf("%s names backend=%q module=%q route=%q, want %q %q %q", code, e.Backend, e.Module, e.Route, backend, module, route)
	}
	if e.Fix == "" {
		t.Fatalf("%s carries no fix: %v", code, err)
	}
	for _, d := range detail {
		if !strings.Contains(e.Detail, d) {
			t.Fatalf("%s detail %q does not name %q", code, e.Detail, d)
		}
	}
	return e
}
