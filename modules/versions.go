package modules

import (
	"context"
	"errors"
	"slices"
	"strings"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

const versionGroup = `group:"tenantwire_versions"`

// versionCheck is one module's start-up version check, as the other
// modules' refusals run it.
type versionCheck struct {
	module string
	run    func(context.Context) error
}

// versionChecks is every module's start-up version check.
type versionChecks struct {
	fx.In
	All []*versionCheck `group:"tenantwire_versions"`
}

// refusal is module's start-up refusal err, joined, when it is
// tenant_migration_behind, with every other module's that is behind too:
// fx stops at the first hook that fails, and an operator who migrated
// only the module named would be refused again for the next. Another
// module's other failures are left to its own hook.
func (v versionChecks) refusal(ctx context.Context, module string, err error) error {
	if tenancy.CodeOf(err) != tenancy.CodeTenantMigrationBehind {
		return err
	}
	errs := []error{err}
	others := slices.SortedFunc(slices.Values(v.All), func(a, b *versionCheck) int { return strings.Compare(a.module, b.module) })
	for _, o := range others {
		if o.module == module {
			continue
		}
		if e := o.run(ctx); tenancy.CodeOf(e) == tenancy.CodeTenantMigrationBehind {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// Versions is a backend module's migrations and RequiredVersion as the
// kit checks them; C is the module's core.
type Versions[C any] struct {
	migrate.Versioning
	// Latest is the newest version of the module's migration set.
	Latest int64
	// PerTenant: the module's tenants have containers of their own, whose
	// versions the Registry records.
	PerTenant bool
	// Invalid are the backend's own problems with its migration set
	// (Versioning.Load's among them).
	Invalid []tenancy.Problem
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
// shared container or a registered tenant is behind; the refusal names
// every module of the app that is behind, each with its tenants and their
// versions. The same check is the
// module's migrations readiness check, so /readyz fails while a tenant
// registered since the start is behind.
func AddVersions[C any](s *Spec, v Versions[C]) {
	for _, p := range append(v.Invalid, v.Problems(v.Latest, v.PerTenant)...) {
		s.Problems = append(s.Problems, s.Rules.WiringInvalid(s.Name, "", p.Detail, p.Fix))
	}
	if v.Required == 0 {
		return
	}
	module, backend := s.Name, s.Rules.Name
	s.Parts = append(s.Parts,
		fx.Provide(fx.Annotate(func(c C) *versionCheck {
			return &versionCheck{module: module, run: func(ctx context.Context) error { return v.check(ctx, c) }}
		}, fx.ResultTags(versionGroup))),
		fx.Invoke(func(lc fx.Lifecycle, c C, all versionChecks) {
			lc.Append(fx.StartHook(func(ctx context.Context) error {
				if err := v.check(ctx, c); err != nil {
					return all.refusal(ctx, module, err)
				}
				return nil
			}))
		}), ProvideReadyCheck(func(c C) ReadyCheck {
			return ReadyCheck{Module: module, Backend: backend, Name: ReadyVersion, Check: func(ctx context.Context) error { return v.check(ctx, c) }}
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
