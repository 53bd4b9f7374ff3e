package neo4j

import (
	"context"
	"fmt"
	"reflect"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/auth"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Option configures a Neo4j module.
type Option = modules.Option

// takes is which of the kit's options a Neo4j module honours.
var takes = modules.Takes{Teardown: true, ConnBudget: true, FromGraph: true, Migrations: true}

type config struct {
	modules.Settings
	driver   drv.DriverWithContext
	connect  *connectSpec
	database string
	routed   *routedConfig
	routes   []*routeSpec
	// test seams: a recording driver stands in for a server.
	fake     driver
	openFake func(endpoint string) driver
}

// sources counts the driver sources the options name.
func (c *config) sources() int {
	n := 0
	for _, set := range []bool{c.driver != nil, c.connect != nil, c.routed != nil, c.FromGraph} {
		if set {
			n++
		}
	}
	if n == 0 && c.fake != nil { // the tests' recording driver, when nothing else is given
		n = 1
	}
	return n
}

type connectSpec struct {
	uri  string
	auth auth.TokenManager
}

// DefaultMaxDepth caps a traversal's depth unless the route sets MaxDepth.
const DefaultMaxDepth = 8

// maxMaxDepth is the largest MaxDepth a route accepts.
const maxMaxDepth = 64

// RouteConfig declares one route. The zero value is a shared graph (tier
// none) on the module's database: every tenant sees everything, which a
// module floor above none refuses at fx.New.
type RouteConfig struct {
	// TenantAware stamps the tenant property on everything the route
	// writes and puts the tenant predicate on every pattern element it
	// reads (tagged).
	TenantAware bool
	// Database opens each tenant's own database on the module's driver
	// (namespace): naming.PerTenant(prefix) names it the prefix, a dash and
	// the tenant's 32 hex digits (the prefix checked at fx.New); a
	// naming.Func names it with a function of the caller's, called per
	// call, never while the app is built. A shared name is refused: the
	// module's database is neo4j.Database(name). Zero: the module's.
	Database naming.Name
	// MaxDepth caps a traversal's depth on a graph route: 1 to 64, or 0
	// for DefaultMaxDepth. A raw route takes none.
	MaxDepth int
}

type routeSpec struct {
	name        string
	kind        floors.Kind
	tenantAware bool
	database    dbFunc
	// maxDepth is the effective cap; cfgDepth what the config said.
	maxDepth int
	cfgDepth int
	prefix   string // naming.PerTenant's prefix, checked at fx.New
	prefixed bool   // the database is naming.PerTenant(prefix)
	shared   bool   // Database named a shared database, which is refused
}

// Use runs the module on d, a driver the caller owns and closes.
func Use(d drv.DriverWithContext) Option { return modules.Own(func(c *config) { c.driver = d }) }

// Connect makes the module build its own driver for uri with the given
// auth (neo4j.BasicAuth, ...) and close it on stop. The driver dials on its
// first session, never at construction.
func Connect(uri string, a auth.TokenManager) Option {
	return modules.Own(func(c *config) { c.connect = &connectSpec{uri: uri, auth: a} })
}

// Database is the database sessions open on routes without a per-tenant
// database ("" is the server's default database).
func Database(name string) Option { return modules.Own(func(c *config) { c.database = name }) }

func addRoute(name string, kind floors.Kind, rc RouteConfig) Option {
	return modules.Own(func(c *config) {
		r := &routeSpec{name: name, kind: kind, tenantAware: rc.TenantAware, database: rc.Database.Func(),
			maxDepth: rc.MaxDepth, cfgDepth: rc.MaxDepth, shared: !rc.Database.IsZero() && !rc.Database.PerTenant()}
		if r.database == nil && rc.Database.PerTenant() {
			r.prefix, r.prefixed, r.database = rc.Database.Base(), true, tenantDatabase(rc.Database.Base())
		}
		if r.maxDepth == 0 {
			r.maxDepth = DefaultMaxDepth
		}
		c.routes = append(c.routes, r)
	})
}

// GraphRoute adds a structured graph route, provided as *Graph
// name:"<name>".
func GraphRoute(name string, cfg RouteConfig) Option { return addRoute(name, kindGraph, cfg) }

// RawCypherRoute switches the raw Cypher hatch on, as a route provided as
// *RawCypher name:"<name>". Its origin is raw, so it wires only on a
// routed driver (dedicated): below that, fx.New refuses it with
// statement_origin_isolation_floor.
func RawCypherRoute(name string, cfg RouteConfig) Option {
	return addRoute(name, kindRawCypher, cfg)
}

// floorsRoute is the route's wiring as enforcement sees it.
func (r *routeSpec) floorsRoute(routed bool) floors.Route {
	db := "(module database)"
	if r.database != nil {
		db = "(per tenant)"
	}
	return floors.Route{
		Name: r.name, Kind: r.kind, TenantAware: r.tenantAware, Routed: routed,
		Relations: []floors.Relation{{Role: roleDatabase, Name: db, PerTenant: r.database != nil}},
	}
}

func (r *routeSpec) validate() []tenancy.Problem {
	var bad []tenancy.Problem
	want := func(detail, fix string) tenancy.Problem { return tenancy.Problem{Detail: detail, Fix: fix} }
	if !validRouteName(r.name) {
		bad = append(bad, want(fmt.Sprintf("route name %q: want 1 to 64 of [A-Za-z0-9_.-]", r.name),
			"rename the route: 1 to 64 letters, digits, '_', '.' or '-'"))
	}
	switch {
	case r.kind == kindRawCypher && r.cfgDepth != 0:
		bad = append(bad, want(fmt.Sprintf("MaxDepth %d on a raw Cypher route: it caps structured traversals only", r.cfgDepth),
			"leave neo4j.RouteConfig.MaxDepth 0 on a RawCypherRoute: a raw statement states its own depth"))
	case r.cfgDepth < 0 || r.cfgDepth > maxMaxDepth:
		bad = append(bad, want(fmt.Sprintf("MaxDepth %d: want 1 to %d", r.cfgDepth, maxMaxDepth),
			fmt.Sprintf("set neo4j.RouteConfig.MaxDepth to a depth from 1 to %d, or leave it 0 for the default (%d)", maxMaxDepth, DefaultMaxDepth)))
	}
	switch {
	case r.shared:
		bad = append(bad, want("a route's Database names a database per tenant; a shared one is the module's",
			"set neo4j.RouteConfig.Database to naming.PerTenant(prefix), or leave it zero and name the module's database with neo4j.Database(name)"))
	case r.prefixed:
		if err := validPrefix(r.prefix); err != nil {
			bad = append(bad, want(err.Error(), fmt.Sprintf(
				"set neo4j.RouteConfig.Database to naming.PerTenant(prefix) with a prefix of 1 to %d characters of lower-case letters, digits, '.' or '-', starting with a letter and not with \"system\"", maxDatabasePrefix)))
		}
	}
	return bad
}

// Module builds a Neo4j module: its wiring, checked during fx.New, and its
// routes, each provided under its route name. Nothing connects here.
func Module(name string, opts ...Option) fx.Option {
	cfg := &config{}
	errs := modules.Configure(rules, name, cfg, takes, opts)
	spec := modules.Spec{Name: name, Rules: rules, Floor: cfg.Floor, ConnBudget: cfg.ConnBudget,
		Sources: cfg.sources(), SourceFix: "pass exactly one of neo4j.Use(d), neo4j.Connect(uri, auth), neo4j.Routed(resolve, cfg) and modules.FromGraph()",
		Problems: errs}
	for _, r := range cfg.routes {
		spec.Routes = append(spec.Routes, modules.RouteSpec{Route: r.floorsRoute(cfg.routed != nil), Problems: r.validate(),
			Provide: provideRoute(r), Provided: []modules.Provided{{Type: r.providedType(), Name: r.name}}})
	}
	if e := rules.StaticInTenantSpace(name, "", "database", cfg.database, databaseSpace, "the database of neo4j.Database(name)"); e != nil {
		spec.Problems = append(spec.Problems, e)
	}
	if cfg.routed != nil {
		spec.WorstCaseConns = cfg.routed.worstCase()
		spec.Problems = append(spec.Problems, cfg.routed.validate(name)...)
	}
	spec.Provided = append(spec.Provided, modules.Provided{Type: reflect.TypeFor[*migrate.Runner](), Name: name})
	spec.Parts = []fx.Option{fx.Provide(fx.Private, newCore(name, cfg)),
		modules.ProvideServerCheck(name, rules.Name, func(c *core) bool { return c.plain == nil },
			func(ctx context.Context, c *core) error {
				s := c.plain.NewSession(ctx, c.database)
				defer func() { _ = s.Close(ctx) }()
				_, err := s.Run(ctx, "RETURN 1", nil)
				return err
			}),
	}
	runner := lifecycle(&spec, cfg)
	spec.Parts = append(spec.Parts, modules.ProvideLifecycle(name, rules.Name, true, runner))
	return modules.Assemble(spec)
}

// providedType is the type the route is provided as.
func (r *routeSpec) providedType() reflect.Type {
	if r.kind == kindRawCypher {
		return reflect.TypeFor[*RawCypher]()
	}
	return reflect.TypeFor[*Graph]()
}

func provideRoute(spec *routeSpec) fx.Option {
	tag := fx.ResultTags(`name:"` + spec.name + `"`)
	if spec.kind == kindRawCypher {
		return fx.Provide(fx.Annotate(func(c *core) *RawCypher { return &RawCypher{r: newRoute(c, spec)} }, tag))
	}
	return fx.Provide(fx.Annotate(func(c *core) *Graph { return &Graph{r: newRoute(c, spec)} }, tag))
}

// core is a module's driver state, private to the module.
type core struct {
	module   string
	plain    driver
	database string
	pools    tenantPools
	// gate refuses calls for tenants behind RequiredVersion (nil: none).
	gate *migrate.Gate
	// tenants refuses a suspended tenant's calls (nil: no lifecycle).
	suspensions *modules.Suspensions
	// tel records route calls (nil: the app gave no telemetry).
	tel *telemetry.Telemetry
}

func (c *core) routed() bool { return c.pools != nil }

type coreIn struct {
	fx.In
	Lifecycle fx.Lifecycle
	Driver    drv.DriverWithContext `optional:"true"`
	modules.LifecycleIn
}

func newCore(module string, cfg *config) func(coreIn) (*core, error) {
	return func(in coreIn) (*core, error) {
		c := &core{module: module, database: cfg.database, gate: migrate.NewGate(module, rules.Name, cfg.Required), suspensions: in.Suspensions, tel: in.Telemetry}
		in.Telemetry.ObserveBehind(module, rules.Name, c.gate.Behind)
		if cfg.routed != nil {
			p, err := newPools(module, cfg)
			if err != nil {
				return nil, err
			}
			c.pools = p
			in.Lifecycle.Append(fx.StopHook(p.Close))
			return c, nil
		}
		switch {
		case cfg.fake != nil:
			c.plain = cfg.fake
		case cfg.driver != nil:
			c.plain = newRealDriver(cfg.driver)
		case cfg.connect != nil:
			d, err := drv.NewDriverWithContext(cfg.connect.uri, cfg.connect.auth)
			if err != nil {
				return nil, rules.WiringInvalid(module, "", "building the driver: "+err.Error(), "check the URI passed to neo4j.Connect")
			}
			c.plain = newRealDriver(d)
			in.Lifecycle.Append(fx.StopHook(func(ctx context.Context) error { return d.Close(ctx) }))
		case in.Driver != nil:
			c.plain = newRealDriver(in.Driver)
		default:
			return nil, rules.WiringInvalid(module, "", "modules.FromGraph is set and nothing in the app provides a neo4j.DriverWithContext",
				"provide a neo4j.DriverWithContext in the app, or pass neo4j.Use(d) or neo4j.Connect(uri, auth) instead of FromGraph")
		}
		return c, nil
	}
}

// validRouteName keeps route names safe inside an fx name tag.
func validRouteName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
