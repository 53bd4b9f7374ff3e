package mongo

import (
	"context"
	"fmt"
	"io/fs"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// MigrationFiles gives the module its migration set ("<version>_<name>.json"
// index steps from fsys, nil for none, and the
// Go steps), checked at fx.New, which the module's runner applies. A
// module needs it for RequiredVersion.
func MigrationFiles(fsys fs.FS, goSteps ...GoStep) Option {
	return func(c *config) { c.migrations = &migrationFiles{fsys, goSteps} }
}

type migrationFiles struct {
	fsys    fs.FS
	goSteps []GoStep
}

// RequiredVersion declares the migration version the module's routes
// need. At start the app refuses (tenant_migration_behind) while a tenant
// the TenantRegistry lists records a version below it; at run time a
// route call for a tenant whose own history (the applied records of
// tenantwire_migrations in its home database, where Migrate writes them)
// is behind is refused before it reads or writes, the version read once
// per tenant and server, then remembered. It needs MigrationFiles (a version
// above the newest step is wiring_invalid) and a TenantRegistry.
func RequiredVersion(v int64) Option { return func(c *config) { c.required = v } }

// TenantRegistry records the module's tenants: its runner's Provision puts
// them, Teardown removes them, MigrateAll reads them and records each
// tenant's version, and the start-up check reads it.
func TenantRegistry(r migrate.Registry) Option { return func(c *config) { c.registry = r } }

// versionWiring loads the MigrationFiles and checks RequiredVersion; it
// returns the module's set (nil without MigrationFiles) and the start-up
// check.
func versionWiring(module string, cfg *config) (*migrations, []error, fx.Option) {
	var m *migrations
	var latest int64
	if cfg.migrations != nil {
		var err error
		if m, err = loadMigrations(module, cfg.routes, cfg.migrations.fsys, cfg.migrations.goSteps); err != nil {
			return nil, []error{rules.WiringInvalid(module, "", err.Error(),
				"name each file <version>_<name>.json (an index step on a route of the module), versions unique across files and Go steps")}, nil
		}
		latest = m.set.Latest()
	}
	if cfg.required == 0 {
		return m, nil, nil
	}
	var errs []error
	for _, p := range migrate.RequiredProblems(cfg.required, latest, true, cfg.registry != nil, "mongo", "mongo.MigrationFiles") {
		errs = append(errs, rules.WiringInvalid(module, "", p.Detail, p.Fix))
	}
	return m, errs, fx.Invoke(func(lc fx.Lifecycle, c *core) {
		lc.Append(fx.StartHook(func(ctx context.Context) error { return c.gate.CheckRegistry(ctx, cfg.registry) }))
	})
}

// home is the route whose tenant database holds a tenant's migration
// records: the first per-tenant route, else the first route.
func (c *core) home(routes []*routeSpec) *routeSpec {
	for _, r := range routes {
		if rt := newRoute(c, r); rt.perTenant || c.pools != nil {
			return r
		}
	}
	return routes[0]
}

// ensureCurrent refuses a call for tenant when its history is behind the
// required version; server is the tenant's routed client target.
func (r *route) ensureCurrent(ctx context.Context, tenant tenancy.ID, server string) error {
	g := r.core.gate
	if g == nil {
		return nil
	}
	return g.Check(ctx, tenant, server, r.spec.name, func(ctx context.Context) (int64, error) {
		v, err := r.core.appliedVersion(ctx, tenant)
		if err != nil {
			return 0, fmt.Errorf("mongo: module %s: reading tenant %s's migration records: %w", r.core.module, tenant, err)
		}
		if v == 0 {
			// Behind from version 0 is "never provisioned" when the
			// tenant's own container is not there at all: say what to call.
			if err := r.core.requireProvisioned(ctx, tenant, r.spec.name); err != nil {
				return 0, err
			}
		}
		return v, nil
	})
}

// requireProvisioned refuses with tenant_not_provisioned when the home
// route's collection, the tenant's own (a collection or database per
// tenant, or the tenant's routed server), does not exist. Asked only for a
// tenant with no applied record, so a current tenant never pays for it. A
// home collection all tenants share proves nothing about one tenant.
func (c *core) requireProvisioned(ctx context.Context, tenant tenancy.ID, route string) error {
	hr := newRoute(c, c.home(c.routes))
	if !hr.perTenant && c.pools == nil {
		return nil
	}
	t, err := hr.targetFor(ctx, tenant)
	if err != nil {
		return err
	}
	defer t.release()
	db, name := t.coll.Database().Name(), t.coll.Name()
	names, err := t.coll.Database().ListCollectionNames(ctx, bson.D{{Key: "name", Value: name}})
	if err != nil {
		return fmt.Errorf("mongo: module %s: looking for tenant %s's collection: %w", c.module, tenant, err)
	}
	if len(names) > 0 {
		return nil
	}
	return &tenancy.Error{
		Code: tenancy.CodeTenantNotProvisioned, Module: c.module, Backend: rules.Name, Route: route,
		Detail: fmt.Sprintf("tenant %s has no collection %s in database %s and no migration records: it was never provisioned, or was torn down; nothing was read or written", tenant, name, db),
		Fix:    "call Provision(ctx, tenant) on the module's *mongo.Provisioner or *migrate.Runner (or Tenants.Provision) before its first call: it creates the collections and indexes and migrates them",
	}
}

// appliedVersion is the newest version tenant's records mark applied (0
// when none).
func (c *core) appliedVersion(ctx context.Context, tenant tenancy.ID) (int64, error) {
	hr := newRoute(c, c.home(c.routes))
	t, err := hr.targetFor(ctx, tenant)
	if err != nil {
		return 0, err
	}
	defer t.release()
	var rec stepRecord
	err = t.coll.Database().Collection(migrationColl).FindOne(ctx,
		bson.D{{Key: "module", Value: c.module}, {Key: "tenant", Value: tenant.Hex()}, {Key: "state", Value: "applied"}},
		options.FindOne().SetSort(bson.D{{Key: "version", Value: -1}})).Decode(&rec)
	if err == driver.ErrNoDocuments {
		return 0, nil
	}
	return rec.Version, err
}
