package neo4j

import (
	"context"
	"fmt"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// RequiredVersion declares the migration version the module's routes
// need. At start the app refuses (tenant_migration_behind) while the
// module's shared database, or a tenant the TenantRegistry lists, is
// behind it; at run time a call for a tenant whose database records an
// older version in its own history (the TenantwireMigration nodes, read
// once per tenant and database, then remembered) is refused before its
// transaction opens. A module with per-tenant databases (routed, or a
// per-tenant Database) needs a TenantRegistry; a version above the newest
// Migrations file is wiring_invalid.
func RequiredVersion(v int64) Option { return func(c *config) { c.required = v } }

// TenantRegistry records the module's tenants: its runner's Provision puts
// them, Teardown removes them, MigrateAll reads them and records each
// tenant's version, and the start-up check reads it.
func TenantRegistry(r migrate.Registry) Option { return func(c *config) { c.registry = r } }

// versionWiring checks RequiredVersion against the module's migrations
// and returns the start-up check.
func versionWiring(module string, cfg *config, latest int64) ([]error, fx.Option) {
	if cfg.required == 0 {
		return nil, nil
	}
	perTenant := cfg.routed != nil
	for _, r := range cfg.routes {
		perTenant = perTenant || r.prefix != "" || r.database != nil
	}
	var errs []error
	for _, p := range migrate.RequiredProblems(cfg.required, latest, perTenant, cfg.registry != nil, "neo4j", "neo4j.Migrations") {
		errs = append(errs, rules.WiringInvalid(module, "", p.Detail, p.Fix))
	}
	reg := cfg.registry
	if !perTenant {
		// Tenants share the database: a registry holds no version of theirs
		// for this module (the shared run records none).
		reg = nil
	}
	return errs, fx.Invoke(func(lc fx.Lifecycle, c *core) {
		lc.Append(fx.StartHook(func(ctx context.Context) error { return c.checkVersions(ctx, cfg.routes, reg) }))
	})
}

// checkVersions refuses to start while the shared database or a
// registered tenant is behind the required version.
func (c *core) checkVersions(ctx context.Context, routes []*routeSpec, reg migrate.Registry) error {
	for _, s := range routes {
		if r := newRoute(c, s); !r.perTenantDB && !c.routed() {
			sess := c.plain.NewSession(ctx, c.database)
			err := c.ensureCurrent(ctx, sess, tenancy.ID{}, c.database, "")
			_ = sess.Close(ctx)
			if err != nil {
				return err
			}
			break
		}
	}
	if reg == nil {
		return nil
	}
	return c.gate.CheckRegistry(ctx, reg)
}

// ensureCurrent refuses a call for tenant (zero: the shared database)
// whose database, target, records a version below the required one.
func (c *core) ensureCurrent(ctx context.Context, sess session, tenant tenancy.ID, target, route string) error {
	return c.gate.Check(ctx, tenant, target, route, func(ctx context.Context) (int64, error) {
		key := sharedTarget
		if !tenant.IsZero() {
			key = tenant.Hex()
		}
		v, err := appliedVersion(ctx, sess, c.module, key)
		if err != nil {
			return 0, fmt.Errorf("neo4j: module %s: reading the migration history: %w", c.module, err)
		}
		return v, nil
	})
}

// appliedVersion is the newest version the database's history records as
// applied for (module, key); 0 when none.
func appliedVersion(ctx context.Context, sess session, module, key string) (int64, error) {
	res, err := sess.ExecuteRead(ctx, func(run runner) (any, error) {
		return run.Run(ctx, "MATCH (h:"+historyLabel+" {module: $module, target: $target, state: 'applied'}) WHERE "+unmarked+" RETURN coalesce(max(h.version), 0)",
			map[string]any{"module": module, "target": key})
	})
	if err != nil {
		return 0, err
	}
	recs := res.([]*drv.Record)
	if len(recs) == 0 {
		return 0, nil
	}
	v, _ := recs[0].Values[0].(int64)
	return v, nil
}
