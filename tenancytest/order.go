package tenancytest

import (
	"slices"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
)

// RequireRefusedInAnyOrder is for backend authors: it fails the test
// unless an app holding refused, a module refused for its options, fails
// fx.New with that module's coded refusal (code, module, backend and fix)
// wherever an app's own invoke asking for what the module provides stands:
// in an fx.Module placed before it (that invoke runs before the module's
// check), at the root before it, or after it. uses names each such invoke
// (an fx.Invoke asking for one provided type); without the module's
// stand-ins the first positions fail with dig's "missing type" instead.
// others, the app's other modules, are in every app, and every code they
// are refused with alone must be reported too: a refused module does not
// hide the rest of the app's violations.
func RequireRefusedInAnyOrder(t testing.TB, code tenancy.Code, module string, refused fx.Option, uses map[string]fx.Option, others ...fx.Option) {
	t.Helper()
	var also []tenancy.Code
	if len(others) > 0 {
		also = tenancy.Codes(fx.New(append([]fx.Option{fx.NopLogger}, others...)...).Err())
	}
	for name, use := range uses {
		for _, pos := range []struct {
			name string
			opts []fx.Option
		}{
			{"in a module before it", append([]fx.Option{fx.Module("app", use), refused}, others...)},
			{"at the root before it", append([]fx.Option{use, refused}, others...)},
			{"after it", append(append([]fx.Option{refused}, others...), fx.Module("app", use))},
		} {
			err := fx.New(append([]fx.Option{fx.NopLogger}, pos.opts...)...).Err()
			e := first(err, func(e *tenancy.Error) bool { return e.Code == code && e.Module == module })
			if e == nil || e.Backend == "" || e.Fix == "" {
				t.Fatalf("invoke %s %s: fx.New: %v; want module %s's coded refusal %s with its backend and fix", name, pos.name, err, module, code)
			}
			got := tenancy.Codes(err)
			for _, c := range also {
				if !slices.Contains(got, c) {
					t.Fatalf("invoke %s %s: codes %v lack %s, which the app's other modules are refused with", name, pos.name, got, c)
				}
			}
		}
	}
}

// Invoke is an app's own invoke asking for a T, under name unless name is
// empty: what RequireRefusedInAnyOrder places around a refused module.
func Invoke[T any](name string) fx.Option {
	if name == "" {
		return fx.Invoke(func(T) {})
	}
	return fx.Invoke(fx.Annotate(func(T) {}, fx.ParamTags(`name:"`+name+`"`)))
}
