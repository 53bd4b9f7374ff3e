package modules

import (
	"fmt"
	"io/fs"
	"path"
	"reflect"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Option configures a backend's module: one of the options below, which
// every backend's Module takes the same way, or one of the backend's own
// (postgres.Connect, redis.CacheRoute). An option given to another
// backend's Module is refused during fx.New.
type Option interface {
	// ApplyOption sets the option on cfg, a backend's configuration, and
	// reports whether cfg is one it is for.
	ApplyOption(cfg any) bool
}

// Settings hold the options every backend takes, as a module's
// configuration keeps them: a backend embeds Settings in its
// configuration struct, and Configure fills it.
type Settings struct {
	// Floor is RequiredIsolation's tier.
	Floor tenancy.Tier
	// Teardown is AllowTeardown.
	Teardown bool
	// ConnBudget is ConnBudget's count (0: no cap).
	ConnBudget int
	// FromGraph: the module takes its client from the app.
	FromGraph bool
	// Offer is Placements' offer (nil: one placement for every tenant).
	Offer *Offer
	// Versioning holds Migrations, RequiredVersion and TenantRegistry.
	migrate.Versioning

	problems []tenancy.Problem
}

func (s *Settings) moduleSettings() *Settings { return s }

// Takes is which of the shared options a backend's modules honour
// besides RequiredIsolation, which every backend takes. A shared option
// not taken is refused, so none is silently ignored.
type Takes struct {
	Teardown, ConnBudget, FromGraph, Placements bool
	// Migrations covers Migrations, RequiredVersion and TenantRegistry.
	Migrations bool
}

// setting is one of the shared options.
type setting struct {
	name string
	// taken reports whether a backend honours the option.
	taken func(Takes) bool
	set   func(*Settings)
}

func (o setting) ApplyOption(cfg any) bool {
	h, ok := cfg.(interface{ moduleSettings() *Settings })
	if ok {
		o.set(h.moduleSettings())
	}
	return ok
}

func always(Takes) bool { return true }

// refuseNegative records the refusal of option's negative value v.
func (s *Settings) refuseNegative(option string, v int64, fix string) {
	if v < 0 {
		s.problems = append(s.problems, tenancy.Problem{Detail: fmt.Sprintf("%s %d is negative", option, v), Fix: fix})
	}
}

// RequiredIsolation declares the floor every route of the module must
// reach; a route under it is refused during fx.New.
func RequiredIsolation(t tenancy.Tier) Option {
	return setting{"RequiredIsolation", always, func(s *Settings) { s.Floor = t }}
}

// AllowTeardown lets the module's Teardown drop what every tenant holds;
// without it Teardown refuses.
func AllowTeardown() Option {
	return setting{"AllowTeardown", func(t Takes) bool { return t.Teardown }, func(s *Settings) { s.Teardown = true }}
}

// ConnBudget caps the connections the module may open in the worst case;
// wiring that could exceed it is refused during fx.New
// (connection_budget_exceeded).
func ConnBudget(n int) Option {
	return setting{"ConnBudget", func(t Takes) bool { return t.ConnBudget }, func(s *Settings) {
		s.ConnBudget = n
		s.refuseNegative("ConnBudget", int64(n), "pass a positive budget, or leave ConnBudget out for none")
	}}
}

// FromGraph takes the module's client from the app's graph, provided by
// another module or the app, instead of opening one.
func FromGraph() Option {
	return setting{"FromGraph", func(t Takes) bool { return t.FromGraph }, func(s *Settings) { s.FromGraph = true }}
}

// Placements gives the module a placement per tenant: each tier of o is
// a placement of every route, and a tenant is served from the one its
// record names (docs/tiered-tenancy.md).
func Placements(o Offer) Option {
	return setting{"Placements", func(t Takes) bool { return t.Placements }, func(s *Settings) { s.Offer = &o }}
}

// Migrations are the module's versioned migrations, applied per tenant
// on Provision and MigrateAll (docs/migrations.md).
func Migrations(fsys fs.FS) Option {
	return setting{"Migrations", func(t Takes) bool { return t.Migrations }, func(s *Settings) { s.Files = fsys }}
}

// RequiredVersion is the migration version the module's routes need: a
// call for a tenant behind it fails with tenant_migration_behind.
func RequiredVersion(v int64) Option {
	return setting{"RequiredVersion", func(t Takes) bool { return t.Migrations }, func(s *Settings) {
		s.Required = v
		s.refuseNegative("RequiredVersion", v, "pass the version of a migration, or leave RequiredVersion out for no check")
	}}
}

// TenantRegistry records the module's tenants and their migration
// versions in r, so MigrateAll and the ready check know every tenant.
func TenantRegistry(r migrate.Registry) Option {
	return setting{"TenantRegistry", func(t Takes) bool { return t.Migrations }, func(s *Settings) { s.Registry = r }}
}

// Own makes a backend's own option, for the backend's configuration
// type C (which embeds Settings).
func Own[C any](set func(*C)) Option { return own[C](set) }

type own[C any] func(*C)

// from names the package that defines the option.
func (own[C]) from() string { return path.Base(reflect.TypeFor[C]().PkgPath()) }

func (o own[C]) ApplyOption(cfg any) bool {
	c, ok := cfg.(*C)
	if ok {
		o(c)
	}
	return ok
}

// Configure applies opts to cfg, a backend's configuration embedding
// Settings. It returns, as the backend's wiring_invalid refusals, each
// option for another backend, each shared option the backend does not
// take, and each shared option given a value it cannot hold.
func Configure(rules floors.Backend, module string, cfg any, takes Takes, opts []Option) []error {
	h, ok := cfg.(interface{ moduleSettings() *Settings })
	if !ok {
		panic(fmt.Sprintf("modules.Configure: %T does not embed modules.Settings", cfg))
	}
	s := h.moduleSettings()
	var errs []error
	for _, o := range opts {
		if st, shared := o.(setting); shared && !st.taken(takes) {
			errs = append(errs, rules.WiringInvalid(module, "", fmt.Sprintf("a %s module does not take modules.%s", rules.Name, st.name),
				"remove modules."+st.name+" from the module"))
			continue
		}
		if o == nil || !o.ApplyOption(cfg) {
			from := fmt.Sprintf("%T", o)
			if f, ok := o.(interface{ from() string }); ok {
				from = "a " + f.from() + " option"
			}
			errs = append(errs, rules.WiringInvalid(module, "", fmt.Sprintf("%s is not an option of the %s backend", from, rules.Name),
				"give each option to the Module of the package that defines it"))
		}
	}
	for _, p := range s.problems {
		errs = append(errs, rules.WiringInvalid(module, "", p.Detail, p.Fix))
	}
	s.problems = nil
	return errs
}
