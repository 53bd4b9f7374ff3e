package kafka

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	kafkago "github.com/segmentio/kafka-go"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Migrations gives the module its topic-configuration steps
// ("<version>_<name>.json": {"routes": [...], "configs": {"retention.ms":
// "86400000", "cleanup.policy": null}}, set on the tenant's topics of the
// named routes, every per-tenant route when none; null deletes a
// setting), checked at fx.New, which the module's runner applies. A
// module needs them for RequiredVersion.
func Migrations(fsys fs.FS) Option { return func(c *config) { c.migrations = fsys } }

// RequiredVersion declares the migration version the module's per-tenant
// topics need. At start the app refuses (tenant_migration_behind) while a
// tenant the TenantRegistry lists records a version below it; at run time
// a Produce or Deliver for a tenant whose topics are behind is refused
// before it writes. Kafka keeps no migration history, so a tenant's
// version there is read from its topics themselves: the newest version of
// Migrations whose configuration (every setting a step up to it set or
// deleted) the tenant's topics carry, read once per tenant and cluster
// with DescribeConfigs, then remembered. It needs Migrations (a version
// above the newest step is wiring_invalid), a TenantRegistry and a route
// with per-tenant topics (or a routed client).
func RequiredVersion(v int64) Option { return func(c *config) { c.required = v } }

// TenantRegistry records the module's tenants: its runner's Provision puts
// them, Teardown removes them, MigrateAll reads them and records each
// tenant's version, and the start-up check reads it.
func TenantRegistry(r migrate.Registry) Option { return func(c *config) { c.registry = r } }

// versions is a module's migration set and required version.
type versions struct {
	set   migrate.Set
	steps []topicStep // parsed, in set order
	gate  *migrate.Gate
}

// versionWiring loads the Migrations and checks RequiredVersion; it
// returns the start-up check.
func versionWiring(module string, cfg *config) (*versions, []error, fx.Option) {
	v := &versions{gate: migrate.NewGate(module, rules.Name, cfg.required)}
	var errs []error
	if cfg.migrations != nil {
		set, err := migrate.Load(cfg.migrations, "json")
		if err != nil {
			return v, []error{rules.WiringInvalid(module, "", err.Error(), "name each migration <version>_<name>.json, versions unique")}, nil
		}
		for _, st := range set {
			ts, err := parseStep(module, cfg.routes, st)
			if err != nil {
				errs = append(errs, rules.WiringInvalid(module, "", err.Error(), "fix the step: a JSON object with \"configs\" and, optionally, \"routes\" of the module"))
			}
			v.steps = append(v.steps, ts)
		}
		v.set = set
	}
	if cfg.required == 0 {
		return v, errs, nil
	}
	for _, p := range migrate.RequiredProblems(cfg.required, v.set.Latest(), true, cfg.registry != nil, "kafka", "kafka.Migrations") {
		errs = append(errs, rules.WiringInvalid(module, "", p.Detail, p.Fix))
	}
	if cfg.routed == nil && !slices.ContainsFunc(cfg.routes, func(r *routeSpec) bool { return r.perTenant != nil }) {
		errs = append(errs, rules.WiringInvalid(module, "", "RequiredVersion on a module without per-tenant topics: migrations change only a tenant's own topics",
			"drop RequiredVersion, or give a route per-tenant topics (naming.PerTenant)"))
	}
	return v, errs, fx.Invoke(func(lc fx.Lifecycle) {
		lc.Append(fx.StartHook(func(ctx context.Context) error { return v.gate.CheckRegistry(ctx, cfg.registry) }))
	})
}

// ensureCurrent refuses a write for tenant when its topics are behind the
// required version; c is the tenant's client.
func (r *route) ensureCurrent(ctx context.Context, c *client, tenant tenancy.ID) error {
	g := r.core.versions.gate
	if g == nil || !r.perTenantTopic && !r.routed {
		return nil // a static topic of the shared client: no tenant's to migrate
	}
	return g.Check(ctx, tenant, c.target, r.spec.name, func(ctx context.Context) (int64, error) {
		return r.core.topicVersion(ctx, c, tenant)
	})
}

// dynamicTopicConfig is DescribeConfigs' source of a setting made on the
// topic itself.
const dynamicTopicConfig = 1

// topicVersion is the newest version of the module's set whose
// configuration tenant's topics carry (0: none): at version v, every
// setting a step up to v set has its value, and every one it deleted is
// not set on the topic.
func (c *core) topicVersion(ctx context.Context, cl *client, tenant tenancy.ID) (int64, error) {
	steps := c.versions.steps
	stepTopics := make([][]string, len(steps))
	names := map[string]map[string]bool{}
	for i, ts := range steps {
		tops, err := c.stepTopics(tenant, ts)
		if err != nil {
			return 0, err
		}
		stepTopics[i] = tops
		for _, t := range tops {
			if names[t] == nil {
				names[t] = map[string]bool{}
			}
			for k := range ts.Configs {
				names[t][k] = true
			}
		}
	}
	if len(names) == 0 {
		return c.versions.set.Latest(), nil
	}
	req := &kafkago.DescribeConfigsRequest{}
	for _, t := range slices.Sorted(maps.Keys(names)) {
		req.Resources = append(req.Resources, kafkago.DescribeConfigRequestResource{
			ResourceType: kafkago.ResourceTypeTopic, ResourceName: t, ConfigNames: slices.Sorted(maps.Keys(names[t]))})
	}
	resp, err := cl.admin().DescribeConfigs(ctx, req)
	if err != nil {
		cl.recover(err)
		return 0, fmt.Errorf("kafka: module %s: reading tenant %s's topic configs: %w", c.module, tenant, err)
	}
	type entry struct {
		value   string
		dynamic bool
	}
	have := map[string]map[string]entry{}
	for _, r := range resp.Resources {
		if errors.Is(r.Error, kafkago.UnknownTopicOrPartition) {
			return 0, nil // not provisioned: at no version
		}
		if r.Error != nil {
			return 0, fmt.Errorf("kafka: module %s: reading topic %s's configs: %w", c.module, r.ResourceName, r.Error)
		}
		m := map[string]entry{}
		for _, e := range r.ConfigEntries {
			m[e.ConfigName] = entry{e.ConfigValue, e.ConfigSource == dynamicTopicConfig}
		}
		have[r.ResourceName] = m
	}
	want := map[string]map[string]*string{}
	var at int64
	for i, ts := range steps {
		for _, t := range stepTopics[i] {
			if want[t] == nil {
				want[t] = map[string]*string{}
			}
			maps.Copy(want[t], ts.Configs)
		}
		ok := true
		for t, kv := range want {
			for k, v := range kv {
				e, set := have[t][k]
				if v == nil && set && e.dynamic || v != nil && (!set || e.value != *v) {
					ok = false
				}
			}
		}
		if ok {
			at = c.versions.set[i].Version
		}
	}
	return at, nil
}
