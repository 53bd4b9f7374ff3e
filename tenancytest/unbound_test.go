package tenancytest

import (
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// recorder is a testing.TB that records failures instead of stopping.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Errorf(string, ...any) { r.failed = true }

func TestRequireUnbound(t *testing.T) {
	full := tenancy.Unbound()
	full.Module, full.Backend, full.Route = "m", "b", "r"
	bare := tenancy.Unbound()
	other := &tenancy.Error{Code: tenancy.CodeWiringInvalid, Module: "m", Backend: "b", Route: "r"}
	for _, c := range []struct {
		name string
		err  error
		pass bool
	}{
		{"complete", full, true},
		{"wrapped", fmt.Errorf("call: %w", full), true},
		{"no fields", bare, false},
		{"other code", other, false},
		{"nil", nil, false},
	} {
		r := &recorder{TB: t}
		RequireUnbound(r, c.err, "m", "b", "r")
		if r.failed == c.pass {
			t.Errorf("%s: failed=%v, want pass=%v", c.name, r.failed, c.pass)
		}
	}
}
