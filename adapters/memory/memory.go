// Package memory is the embedded default backend: a document store, a
// key/value cache and a stream held in process memory, for demos and for
// users' unit tests. It enforces tagged and namespace for real (records
// carry their tenant; per-tenant containers are separate maps) and has no
// per-tenant connections, so its ceiling is namespace: a dedicated floor is
// a capability mismatch. Its routes and configs have the same shape as the
// real adapters'.
package memory

import (
	"context"
	"fmt"
	"reflect"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Rules is what the memory backend can reach, read by enforcement, the CLI
// and the docs alike; each call returns a fresh value, so no caller can change
// what the adapter enforces.
func Rules() floors.Backend {
	return floors.Backend{
		Name:    "memory",
		Ceiling: tenancy.Namespace,
		Kinds: map[floors.Kind]floors.KindRule{
			"document": {Summary: "typed document store", Relations: []string{"read", "write"}},
			"cache":    {Summary: "key/value cache with TTL", Relations: []string{"keys"}},
			"stream":   {Summary: "append-only stream with consumers", Relations: []string{"stream"}},
		},
	}
}

// rules is the package's own copy, read on every call.
var rules = Rules()

// containerName is c's container for tenant id: the shared name, or
// "<base>.<tenant hex>" per tenant. Base names hold no dot, so a
// per-tenant name can never equal a static one or another tenant's.
func containerName(c naming.Name, id tenancy.ID) string {
	if c.PerTenant() {
		return c.Base() + "." + id.Hex()
	}
	return c.Base()
}

// containerProblems refuses names that could make a per-tenant name
// collide, and resolvers of the caller's own.
func containerProblems(c naming.Name) []tenancy.Problem {
	if c.Func() != nil {
		return []tenancy.Problem{{Detail: "memory spells per-tenant container names itself", Fix: "use naming.PerTenant(base) instead of naming.Func"}}
	}
	if c.Base() == "" {
		return []tenancy.Problem{{Detail: "the route names an empty container", Fix: "set the route's container to naming.Shared(name) (shared) or naming.PerTenant(base) (namespace)"}}
	}
	for _, r := range c.Base() {
		if !(r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return []tenancy.Problem{{Detail: fmt.Sprintf("container name %q holds %q", c.Base(), r),
				Fix: "use only letters, digits, '-' and '_': a dot separates a per-tenant container's tenant"}}
		}
	}
	return nil
}

func containerRelation(c naming.Name, role string) floors.Relation {
	return floors.Relation{Role: role, Name: c.Base(), PerTenant: c.PerTenant()}
}

// Option configures a memory module.
type Option = modules.Option

// takes is which of the kit's options a memory module honours.
var takes = modules.Takes{Teardown: true}

type config struct {
	modules.Settings
	routes  []modules.RouteSpec
	workers []modules.WorkerSpec
	streams map[string]StreamConfig
}

// addRoute lists a route, what is wrong with it, and what it provides to
// the app: the route object R, unnamed and under the route's name, as
// every backend provides it; the matrix shows it even when refused, and
// a refused module provides a stand-in of its type.
func addRoute[R any](c *config, r floors.Route, problems []tenancy.Problem, provide func(*store) R) {
	typ := reflect.TypeFor[R]()
	c.routes = append(c.routes, modules.RouteSpec{Route: r, Problems: problems,
		Provide:  fx.Options(fx.Provide(provide), modules.AlsoNamed[R](r.Name)),
		Provided: []modules.Provided{{Type: typ}, {Type: typ, Name: r.Name}}})
}

// Module builds an fx module of memory routes. Its wiring is checked during
// fx.New; the store itself is private to the module and fresh per app.
func Module(name string, opts ...Option) fx.Option {
	var c config
	errs := modules.Configure(rules, name, &c, takes, opts)
	for i := range c.workers {
		c.workers[i].Worker.Module = name
	}
	return modules.Assemble(modules.Spec{
		Name: name, Rules: rules, Floor: c.Floor, Problems: errs,
		Routes: c.routes, Workers: c.workers,
		Parts: []fx.Option{fx.Provide(fx.Private, func(lin modules.LifecycleIn) *store {
			s := newStore()
			s.module, s.suspensions, s.teardown, s.tel = name, lin.Suspensions, c.Teardown, lin.Telemetry
			return s
		}),
			modules.ProvideTenantState(func(s *store) modules.TenantState {
				return modules.TenantState{Module: name, Backend: rules.Name, Offboard: s.offboard, Verify: s.verify,
					Export: s.export, Import: s.importArchive}
			})},
	})
}

// routeConfig is what every route shares: the rules' decision for it,
// which says whether a call needs a tenant, which containers are per
// tenant and whether records are tagged, and the kit's entry its calls go
// through.
type routeConfig struct {
	module, name string
	decision     floors.Decision
	suspensions  *modules.Suspensions
	// entry admits each call: tenant, in flight and suspension, span. An
	// in-process route reaches nothing and has no version gate.
	entry *modules.Gate
}

func newRouteConfig(s *store, r floors.Route) routeConfig {
	d := rules.Decide(r)
	tel := s.tel.Route(telemetry.RouteInfo{Backend: rules.Name, Module: s.module, Route: r.Name, Kind: string(r.Kind), Reached: d.Reached})
	g := modules.GateOf(modules.GateSpec{Rules: rules, Module: s.module, Route: r.Name, Decision: d, Suspensions: s.suspensions, Telemetry: tel})
	return routeConfig{module: s.module, name: r.Name, decision: d, suspensions: s.suspensions, entry: g}
}

// scope resolves where a call lands: the container in role and the tenant
// tag (zero for an untagged route). It fails closed when the route is
// tenant-scoped and no tenant is bound. The call is in flight until the
// caller runs end, once its map operation is done, so an Offboard waits
// for it; its span, when the app gives telemetry, lasts as long.
func (r routeConfig) scope(ctx context.Context, c naming.Name, role string) (string, tenancy.ID, func(), error) {
	_, id, end, err := r.entry.Call(ctx)
	if err != nil {
		return "", tenancy.ID{}, nil, err
	}
	name := containerName(c, tenancy.ID{})
	if r.decision.NeedsTenant && r.decision.ResolvesPerTenant(role) {
		name = containerName(c, id)
	}
	var tag tenancy.ID
	if r.decision.NeedsTenant && r.decision.Tagged {
		tag = id
	}
	return name, tag, end, nil
}

func nop() {}
