package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TopicStep is the body of a Kafka migration file ("0002_retention.json"):
// topic configuration set on the tenant's topics of the named routes
// (every per-tenant route when Routes is empty). A null value deletes the
// setting (back to the broker's default).
//
//	{"routes": ["orders"], "configs": {"retention.ms": "86400000", "cleanup.policy": null}}
type TopicStep struct {
	Routes  []string           `json:"routes"`
	Configs map[string]*string `json:"configs"`
}

// LoadTopicMigrations reads "<version>_<name>.json" topic steps from fsys
// and checks that each one parses and names routes of the module.
func (p *Provisioner) LoadTopicMigrations(fsys fs.FS) (migrate.Set, error) {
	set, err := migrate.Load(fsys, "json")
	if err != nil {
		return nil, err
	}
	for _, st := range set {
		if _, err := p.parseStep(st); err != nil {
			return nil, err
		}
	}
	return set, nil
}

func (p *Provisioner) parseStep(st migrate.Step) (TopicStep, error) {
	return parseStep(p.core.module, p.routes, st)
}

func parseStep(module string, routes []*routeSpec, st migrate.Step) (TopicStep, error) {
	var ts TopicStep
	dec := json.NewDecoder(bytes.NewReader(st.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ts); err != nil {
		return ts, fmt.Errorf("kafka: module %s: migration %s: %w", module, st.File(), err)
	}
	if len(ts.Configs) == 0 {
		return ts, fmt.Errorf("kafka: module %s: migration %s sets no configs", module, st.File())
	}
	for _, name := range ts.Routes {
		if !slices.ContainsFunc(routes, func(r *routeSpec) bool { return r.name == name }) {
			return ts, fmt.Errorf("kafka: module %s: migration %s names route %q, which the module does not have", module, st.File(), name)
		}
	}
	return ts, nil
}

// MigrateTopics applies to tenant's topics the steps of set above version
// from (the version a registry recorded; 0 for all). Setting a topic
// config is idempotent, so a step applied again after a crash (or by a
// second migrator) leaves the same configuration: Kafka keeps no history
// of its own, the registry holds the version. With RequiredVersion it
// first reads the version the topics carry and starts from the lower of
// that and from (a registry ahead of the topics skips no step), and
// afterwards the module's producers take the tenant as current.
func (p *Provisioner) MigrateTopics(ctx context.Context, tenant tenancy.ID, set migrate.Set, from int64) ([]migrate.Change, error) {
	if tenant.IsZero() {
		return nil, tenancy.Unbound()
	}
	g, target := p.core.versions.gate, ""
	if g != nil {
		c, release, err := p.core.clientFor(ctx, tenant)
		if err != nil {
			return nil, err
		}
		v, err := p.core.topicVersion(ctx, c, tenant)
		target = c.target
		release()
		if err != nil {
			return nil, err
		}
		from = min(from, v)
	}
	var changes []migrate.Change
	for _, st := range set {
		if st.Version <= from {
			continue
		}
		ts, err := p.parseStep(st)
		if err != nil {
			return changes, err
		}
		if err := p.alter(ctx, tenant, ts); err != nil {
			return changes, fmt.Errorf("kafka: module %s: migration %s for tenant %s: %w", p.core.module, st.File(), tenant, err)
		}
		changes = append(changes, migrate.Change{Tenant: tenant, Module: p.core.module, Version: st.Version, Name: st.Name})
	}
	g.Mark(tenant, target, set.Latest())
	return changes, nil
}

// stepTopics is tenant's topics a step sets: those of the routes it
// names (every per-tenant route when none), each once.
func (c *core) stepTopics(tenant tenancy.ID, ts TopicStep) ([]string, error) {
	var out []string
	for _, r := range c.routes {
		if r.perTenant == nil && c.pools == nil || len(ts.Routes) > 0 && !slices.Contains(ts.Routes, r.name) {
			continue
		}
		rt := newRoute(c, r)
		name, err := rt.topicFor(tenant)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

func (p *Provisioner) alter(ctx context.Context, tenant tenancy.ID, ts TopicStep) error {
	var res []kafkago.IncrementalAlterConfigsRequestResource
	names, err := p.core.stepTopics(tenant, ts)
	if err != nil {
		return err
	}
	for _, name := range names {
		rr := kafkago.IncrementalAlterConfigsRequestResource{ResourceType: kafkago.ResourceTypeTopic, ResourceName: name}
		for _, k := range slices.Sorted(maps.Keys(ts.Configs)) {
			c := kafkago.IncrementalAlterConfigsRequestConfig{Name: k, ConfigOperation: kafkago.ConfigOperationSet}
			if v := ts.Configs[k]; v != nil {
				c.Value = *v
			} else {
				c.ConfigOperation = kafkago.ConfigOperationDelete
			}
			rr.Configs = append(rr.Configs, c)
		}
		res = append(res, rr)
	}
	if len(res) == 0 {
		return nil
	}
	c, release, err := p.core.clientFor(ctx, tenant)
	if err != nil {
		return err
	}
	defer release()
	resp, err := c.admin().IncrementalAlterConfigs(ctx, &kafkago.IncrementalAlterConfigsRequest{Resources: res})
	if err != nil {
		c.recover(err)
		return err
	}
	var errs []error
	for _, r := range resp.Resources {
		if r.Error != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", r.ResourceName, r.Error))
		}
	}
	return errors.Join(errs...)
}

// MigrateAll applies set to every tenant (tenants, or the registry's ready
// tenants when nil) with bounded concurrency, starting each tenant after
// the version reg recorded for it and recording the new one. A dry run
// lists the steps each tenant would get.
func (p *Provisioner) MigrateAll(ctx context.Context, tenants []tenancy.ID, set migrate.Set, reg migrate.Registry, o migrate.Options) (migrate.Report, error) {
	from := map[tenancy.ID]int64{}
	if reg != nil {
		all, err := reg.List(ctx)
		if err != nil {
			return migrate.Report{}, err
		}
		for _, t := range all {
			from[t.ID] = t.Versions[p.core.module]
		}
		if tenants == nil {
			if tenants, err = migrate.ReadyTenants(ctx, reg); err != nil {
				return migrate.Report{}, err
			}
		}
	}
	return migrate.Each(ctx, "migrate "+p.core.module, tenants, o, func(ctx context.Context, t tenancy.ID, rec *migrate.Recorder) error {
		if o.DryRun {
			for _, st := range set {
				if st.Version > from[t] {
					rec.Add(migrate.Change{Tenant: t, Module: p.core.module, Version: st.Version, Name: st.Name})
				}
			}
			return nil
		}
		ch, err := p.MigrateTopics(ctx, t, set, from[t])
		rec.Add(ch...)
		if err != nil || reg == nil || len(ch) == 0 {
			return err
		}
		return reg.SetVersion(ctx, t, p.core.module, set.Latest())
	}), nil
}

// provisionBatch is how many tenants' topics one CreateTopics request of
// ProvisionAll carries on a shared client.
const provisionBatch = 100

// ProvisionAll provisions tenants' topics with bounded concurrency,
// recording each in reg when given. On a shared client the topics of up to
// 100 tenants go in one admin request (a routed client calls each
// tenant's own cluster). Creating a topic that exists is a no-op, so a
// rerun after a crash completes the rest.
func (p *Provisioner) ProvisionAll(ctx context.Context, tenants []tenancy.ID, reg migrate.Registry, o migrate.Options) migrate.Report {
	size := provisionBatch
	if p.core.pools != nil {
		size = 1
	}
	return migrate.EachBatch(ctx, "provision "+p.core.module, tenants, size, o, func(ctx context.Context, batch []tenancy.ID, _ *migrate.Recorder) []error {
		errs := make([]error, len(batch))
		if reg != nil {
			for i, t := range batch {
				errs[i] = reg.Put(ctx, t, migrate.Provisioning)
			}
		}
		var topics []kafkago.TopicConfig
		owner := map[string]int{}
		for i, t := range batch {
			if errs[i] != nil {
				continue
			}
			tt, err := p.tenantTopics(t)
			if err != nil {
				errs[i] = err
				continue
			}
			for _, tc := range tt {
				owner[tc.Topic] = i
			}
			topics = append(topics, tt...)
		}
		tenant := tenancy.ID{}
		if size == 1 {
			tenant = batch[0]
		}
		perTopic, err := p.createTopics(ctx, tenant, topics)
		for i := range batch {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		for topic, e := range perTopic {
			if i := owner[topic]; errs[i] == nil {
				errs[i] = e
			}
		}
		if reg != nil {
			for i, t := range batch {
				if errs[i] == nil {
					errs[i] = reg.Put(ctx, t, migrate.Ready)
				}
			}
		}
		return errs
	})
}
