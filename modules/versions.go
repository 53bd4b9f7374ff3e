package modules

import (
	"context"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
)

// Versions is a backend module's migrations and RequiredVersion as the
// kit checks them; C is the module's core.
type Versions[C any] struct {
	migrate.Versioning
	// Pkg names the adapter package, for the fix texts ("kafka").
	Pkg string
	// Latest is the newest version of the module's migration set.
	Latest int64
	// PerTenant: the module's tenants have containers of their own, whose
	// versions the Registry records.
	PerTenant bool
	// Invalid are the backend's own problems with its migration set
	// (Versioning.Load's among them).
	Invalid []migrate.Problem
	// Gate is the gate the module's core holds.
	Gate func(C) *migrate.Gate
	// Shared (nil: none) reads through the gate whether the container
	// every tenant shares (a static schema, the module's database) is
	// current.
	Shared func(C, context.Context) error
}

// AddVersions checks v at fx.New, refusing its problems as s's backend's
// wiring_invalid, and, when v requires a version, adds to s the start-up
// check (migrate.Versioning.Start): the app does not start while the
// shared container or a registered tenant is behind. The same check is the
// module's migrations readiness check, so /readyz fails while a tenant
// registered since the start is behind.
func AddVersions[C any](s *Spec, v Versions[C]) {
	for _, p := range append(v.Invalid, v.Problems(v.Latest, v.PerTenant, v.Pkg)...) {
		s.Problems = append(s.Problems, s.Rules.WiringInvalid(s.Name, "", p.Detail, p.Fix))
	}
	if v.Required == 0 {
		return
	}
	module, backend := s.Name, s.Rules.Name
	s.Parts = append(s.Parts, fx.Invoke(func(lc fx.Lifecycle, c C) {
		lc.Append(fx.StartHook(func(ctx context.Context) error { return v.check(ctx, c) }))
	}), ProvideReadyCheck(func(c C) ReadyCheck {
		return ReadyCheck{Module: module, Backend: backend, Check: func(ctx context.Context) error { return v.check(ctx, c) }}
	}))
}

// check is the start-up check of the module whose core is c.
func (v Versions[C]) check(ctx context.Context, c C) error {
	var shared func(context.Context) error
	if v.Shared != nil {
		shared = func(ctx context.Context) error { return v.Shared(c, ctx) }
	}
	return v.Start(ctx, v.Gate(c), v.PerTenant, shared)
}
