// Package tenancytest is the testkit for users and adapters: assert that a
// set of fx options wires or is refused with a code (RequireWires,
// RequireRefused, RequireRefusedRoute), pin the app's tenancy matrix to a
// golden file (RequireMatrix), all without touching any server, and probe a
// route's tenant boundary for real (Boundary).
//
// For backend authors, Conformance is the backend conformance kit: given
// a backend's Rules and a Factory that builds a route of a kind at a tier
// against a live server, it runs the Boundary probe and FailsClosed on
// every cell of the capability matrix the rules reach, and fails the run
// for any cell the factory does not cover.
package tenancytest

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/tenancy"
)

// RequireWires builds an fx app from opts (fx.New only: no OnStart hook
// runs, so no server is touched) and fails the test when it is refused.
// The app's *slog.Logger (the app's own, or the one its components fall
// back to when it provides none) writes to a buffer that goes to t.Log
// only when the wiring is refused: a passing check prints nothing. A
// component requiring a logger the app does not provide is still refused.
func RequireWires(t testing.TB, opts ...fx.Option) {
	t.Helper()
	var logs lockedBuffer
	quiet := slog.New(slog.NewTextHandler(&logs, nil))
	// The app's options in a module of their own, so that a decorator of
	// the logger among them applies over this one rather than clash.
	app := fx.New(fx.NopLogger, fx.Decorate(func(appLogger) *slog.Logger { return quiet }), fx.Module("app", opts...))
	if err := app.Err(); err != nil {
		if s := logs.String(); s != "" {
			t.Logf("the app logged:\n%s", s)
		}
		t.Fatalf("wiring refused: %v", err)
	}
}

// appLogger is the app's *slog.Logger, if it provides one.
type appLogger struct {
	fx.In
	Logger *slog.Logger `optional:"true"`
}

// lockedBuffer is a bytes.Buffer safe for the app's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
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
	found := first(err, func(e *tenancy.Error) bool { return e.Code == code })
	if found == nil {
		t.Fatalf("wiring refused without %s: %v", code, err)
	}
	return found
}

// RequireRefusedRoute is RequireRefused for one route: it fails the test
// unless the app is refused with a *tenancy.Error of the given code naming
// that module and route, so a refusal of another route with the same code
// does not pass for it. An empty route matches a module-level refusal.
func RequireRefusedRoute(t testing.TB, code tenancy.Code, module, route string, opts ...fx.Option) *tenancy.Error {
	t.Helper()
	err := fx.New(append([]fx.Option{fx.NopLogger}, opts...)...).Err()
	if err == nil {
		t.Fatalf("wiring accepted, want refusal of %s/%s with %s", module, route, code)
	}
	found := first(err, func(e *tenancy.Error) bool { return e.Code == code && e.Module == module && e.Route == route })
	if found == nil {
		t.Fatalf("wiring refused, but not route %s/%s with %s: %v", module, route, code, err)
	}
	return found
}

func first(err error, match func(*tenancy.Error) bool) *tenancy.Error {
	switch u := err.(type) {
	case *tenancy.Error:
		if match(u) {
			return u
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if e := first(inner, match); e != nil {
				return e
			}
		}
	case interface{ Unwrap() error }:
		return first(u.Unwrap(), match)
	}
	return nil
}
