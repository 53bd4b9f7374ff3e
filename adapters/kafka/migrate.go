package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// topicStep is the body of a Kafka migration file ("0002_retention.json"):
// topic configuration set on the tenant's topics of the named routes
// (every per-tenant route when Routes is empty). A null value deletes the
// setting (back to the broker's default).
//
//	{"routes": ["orders"], "configs": {"retention.ms": "86400000", "cleanup.policy": null}}
type topicStep struct {
	Routes  []string           `json:"routes"`
	Configs map[string]*string `json:"configs"`
}

func parseStep(module string, routes []*routeSpec, st migrate.Step) (topicStep, error) {
	var ts topicStep
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

// versions is a module's migration set, parsed once when the module is
// built; the version gate is each app's own (core.gate), so two apps built
// from one Module option never share what they remember.
type versions struct {
	set   migrate.Set
	steps []topicStep // parsed, in set order
}

// versionWiring loads and checks the module's migrations and adds its
// version check to spec.
func versionWiring(spec *modules.Spec, cfg *config) *versions {
	v := &versions{}
	var bad []tenancy.Problem
	v.set, bad = cfg.Load("json")
	for _, st := range v.set {
		ts, err := parseStep(spec.Name, cfg.routes, st)
		if err != nil {
			bad = append(bad, tenancy.Problem{Detail: err.Error(), Fix: "fix the step: a JSON object with \"configs\" and, optionally, \"routes\" of the module"})
		}
		v.steps = append(v.steps, ts)
	}
	if cfg.Required > 0 && cfg.routed == nil && !slices.ContainsFunc(cfg.routes, func(r *routeSpec) bool { return r.perTenant != nil }) {
		bad = append(bad, tenancy.Problem{Detail: "RequiredVersion on a module without per-tenant topics: migrations change only a tenant's own topics",
			Fix: "drop RequiredVersion, or give a route per-tenant topics (naming.PerTenant)"})
	}
	modules.AddVersions(spec, modules.Versions[*core]{Versioning: cfg.Versioning, Latest: v.set.Latest(), PerTenant: true,
		Invalid: bad, Gate: func(c *core) *migrate.Gate { return c.gate }})
	return v
}

// lifecycleTarget is the module's side of its migrate.Runner. Kafka keeps
// no history of its own: a tenant's applied steps are read from its
// topics' configuration (topicVersion), and setting a config is
// idempotent, so a step applied again after a crash (or by a second
// migrator) leaves the same configuration.
type lifecycleTarget struct {
	core     *core
	routes   []*routeSpec
	teardown bool
}

func (t *lifecycleTarget) runner(registry migrate.Registry) *migrate.Runner {
	return migrate.NewRunner(migrate.Spec{Module: t.core.module, Backend: rules.Name, Set: t.core.versions.set, Registry: registry,
		Gate: t.core.gate, PerTenant: true, AllowTeardown: t.teardown}, t)
}

// history is a tenant's topics on its client, open for one run.
type history struct {
	t       *lifecycleTarget
	tenant  tenancy.ID
	c       *client
	release func()
}

func (t *lifecycleTarget) Open(ctx context.Context, tenant tenancy.ID, _ bool) ([]migrate.History, error) {
	c, release, err := t.core.clientFor(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return []migrate.History{&history{t: t, tenant: tenant, c: c, release: release}}, nil
}

func (h *history) Key() string { return h.c.target }

// Applied is the steps up to the version the topics carry.
func (h *history) Applied(ctx context.Context) ([]migrate.Applied, error) {
	v, err := h.t.core.topicVersion(ctx, h.c, h.tenant)
	if err != nil {
		return nil, err
	}
	var out []migrate.Applied
	for _, st := range h.t.core.versions.set {
		if st.Version <= v {
			out = append(out, migrate.Applied{Version: st.Version, Name: st.Name, Checksum: st.Checksum})
		}
	}
	return out, nil
}

// Claim: a step is idempotent, so two migrators may both apply it.
func (h *history) Claim(context.Context, migrate.Step) (bool, error) { return true, nil }

func (h *history) Apply(ctx context.Context, st migrate.Step) error {
	i := slices.IndexFunc(h.t.core.versions.set, func(s migrate.Step) bool { return s.Version == st.Version })
	return h.t.alter(ctx, h.c, h.tenant, h.t.core.versions.steps[i])
}

func (h *history) Close(context.Context, error) error {
	h.release()
	return nil
}

// stepTopics is tenant's topics a step sets: those of the routes it
// names (every per-tenant route when none), each once.
func (c *core) stepTopics(tenant tenancy.ID, ts topicStep) ([]string, error) {
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

func (t *lifecycleTarget) alter(ctx context.Context, c *client, tenant tenancy.ID, ts topicStep) error {
	var res []kafkago.IncrementalAlterConfigsRequestResource
	names, err := t.core.stepTopics(tenant, ts)
	if err != nil {
		return err
	}
	for _, name := range names {
		rr := kafkago.IncrementalAlterConfigsRequestResource{ResourceType: kafkago.ResourceTypeTopic, ResourceName: name}
		for _, k := range slices.Sorted(maps.Keys(ts.Configs)) {
			cfg := kafkago.IncrementalAlterConfigsRequestConfig{Name: k, ConfigOperation: kafkago.ConfigOperationSet}
			if v := ts.Configs[k]; v != nil {
				cfg.Value = *v
			} else {
				cfg.ConfigOperation = kafkago.ConfigOperationDelete
			}
			rr.Configs = append(rr.Configs, cfg)
		}
		res = append(res, rr)
	}
	if len(res) == 0 {
		return nil
	}
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

// provisionBatch is how many tenants' topics one CreateTopics request of
// ProvisionAll carries on a shared client.
const provisionBatch = 100

// Batch: on a shared client the topics of up to 100 tenants go in one
// admin request; a routed client calls each tenant's own cluster.
func (t *lifecycleTarget) Batch() int {
	if t.core.pools != nil {
		return 1
	}
	return provisionBatch
}

// ProvisionBatch creates the topics of a batch of tenants in one request.
func (t *lifecycleTarget) ProvisionBatch(ctx context.Context, batch []tenancy.ID) []error {
	errs := make([]error, len(batch))
	var topics []kafkago.TopicConfig
	owner := map[string]int{}
	for i, tn := range batch {
		tt, err := t.tenantTopics(tn)
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
	if len(batch) == 1 {
		tenant = batch[0]
	}
	perTopic, err := t.createTopics(ctx, tenant, topics)
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
	return errs
}
