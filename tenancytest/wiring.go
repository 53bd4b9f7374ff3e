// Package tenancytest is the testkit for users and adapters: assert that a
// set of fx options wires or is refused with a code, without touching any
// server, and probe a route's tenant boundary for real.
//
// For backend authors, Conformance is the backend conformance kit: given
// a backend's Rules and a Factory that builds a route of a kind at a tier
// against a live server, it runs the Boundary probe and FailsClosed on
// every cell of the capability matrix the rules reach, and fails the run
// for any cell the factory does not cover.
package tenancytest

import (
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
)

// RequireWires builds an fx app from opts (fx.New only: no OnStart hook
// runs, so no server is touched) and fails the test when it is refused.
func RequireWires(t testing.TB, opts ...fx.Option) {
	t.Helper()
	if err := fx.New(append([]fx.Option{fx.NopLogger}, opts...)...).Err(); err != nil {
		t.Fatalf("wiring refused: %v", err)
	}
}

// RequireRefused builds an fx app from opts and fails the test unless it
// is refused with a *tenancy.Error of the given code. It returns that error
// so the test can assert its fields.
func RequireRefused(t testing.TB, code tenancy.Code, opts ...fx.Option) *tenancy.Error {
	t.Helper()
	err := fx.New(append([]fx.Option{fx.NopLogger}, opts...)...).Err()
	if err == nil {
		t.Fatalf("wiring accepted, want refusal with %s", code)
	}
	found := firstWithCode(err, code)
	if found == nil {
		t.Fatalf("wiring refused without %s: %v", code, err)
	}
	return found
}

func firstWithCode(err error, code tenancy.Code) *tenancy.Error {
	switch u := err.(type) {
	case *tenancy.Error:
		if u.Code == code {
			return u
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if e := firstWithCode(inner, code); e != nil {
				return e
			}
		}
	case interface{ Unwrap() error }:
		return firstWithCode(u.Unwrap(), code)
	}
	return nil
}
