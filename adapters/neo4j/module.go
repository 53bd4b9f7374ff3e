package neo4j

import (
	"context"
	"fmt"
	"io/fs"
	"reflect"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/auth"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Option configures a Neo4j module.
type Option func(*config)

type config struct {
	driver   drv.DriverWithContext
	connect  *connectSpec
	database string
	floor    tenancy.Tier
	budget   int
	routed   *routedConfig
	routes   []*routeSpec
	// migrations: the Migrations option's files (nil: none).
	migrations fs.FS
	// required and registry: RequiredVersion and TenantRegistry.
	required int64
	registry migrate.Registry
	// test seams: a recording driver stands in for a server.
	fake     driver
	openFake func(endpoint string) driver
}

type connectSpec struct {
	uri  string
	auth auth.TokenManager
}

// DefaultMaxDepth caps a traversal's depth unless the route sets MaxDepth.
const DefaultMaxDepth = 8

// MaxMaxDepth is the largest MaxDepth a route accepts.
const MaxMaxDepth = 64

// RouteConfig declares one route. The zero value is a shared graph (tier
// none) on the module's database: every tenant sees everything, which a
// module floor above none refuses at fx.New.
type RouteConfig struct {
	// TenantAware stamps the tenant property on everything the route
	// writes and puts the tenant predicate on every pattern element it
	// reads (tagged).
	TenantAware bool
	// DatabasePrefix opens each tenant's own database on the module's
	// driver, named the prefix, a dash and the tenant's 32 hex digits
	// (namespace); the prefix is checked at fx.New.
	DatabasePrefix string
	// Database names each tenant's database with a function of the
	// caller's instead (namespace), called per call, never while the app
	// is built. Set at most one of DatabasePrefix and Database.
	Database DatabaseFunc
	// MaxDepth caps a traversal's depth on a graph route: 1 to
	// MaxMaxDepth, or 0 for DefaultMaxDepth. A raw route takes none.
	MaxDepth int
}

type routeSpec struct {
	name        string
	kind        floors.Kind
	tenantAware bool
	database    DatabaseFunc
	// maxDepth is the effective cap; cfgDepth what the config said.
	maxDepth int
	cfgDepth int
	prefix   string // DatabasePrefix, checked at fx.New
	both     bool   // DatabasePrefix and Database were both set
}

// Driver runs the module on d, a driver the caller owns and closes.
// Without Driver, Connect or Routed, the module takes a
// neo4j.DriverWithContext from the fx graph.
func Driver(d drv.DriverWithContext) Option { return func(c *config) { c.driver = d } }

// Connect makes the module build its own driver for uri with the given
// auth (neo4j.BasicAuth, ...) and close it on stop. The driver dials on its
// first session, never at construction.
func Connect(uri string, a auth.TokenManager) Option {
	return func(c *config) { c.connect = &connectSpec{uri: uri, auth: a} }
}

// Database is the database sessions open on routes without a per-tenant
// database ("" is the server's default database).
func Database(name string) Option { return func(c *config) { c.database = name } }

// RequiredIsolation declares the floor every route must reach.
func RequiredIsolation(t tenancy.Tier) Option { return func(c *config) { c.floor = t } }

// ConnBudget caps the connections the module's drivers can open in
// the worst case (routed: MaxClients × MaxConnsPerClient); fx.New refuses
// a wiring above it with connection_budget_exceeded.
func ConnBudget(n int) Option { return func(c *config) { c.budget = n } }

func addRoute(name string, kind floors.Kind, rc RouteConfig) Option {
	return func(c *config) {
		r := &routeSpec{name: name, kind: kind, tenantAware: rc.TenantAware, database: rc.Database,
			maxDepth: rc.MaxDepth, cfgDepth: rc.MaxDepth, prefix: rc.DatabasePrefix, both: rc.Database != nil && rc.DatabasePrefix != ""}
		if rc.DatabasePrefix != "" && rc.Database == nil {
			r.database = TenantDatabase(rc.DatabasePrefix)
		}
		if r.maxDepth == 0 {
			r.maxDepth = DefaultMaxDepth
		}
		c.routes = append(c.routes, r)
	}
}

// GraphRoute adds a structured graph route, provided as *Graph
// name:"<name>".
func GraphRoute(name string, cfg RouteConfig) Option { return addRoute(name, KindGraph, cfg) }

// RawCypherRoute switches the raw Cypher hatch on, as a route provided as
// *RawCypher name:"<name>". Its origin is raw, so it wires only on a
// routed driver (dedicated): below that, fx.New refuses it with
// statement_origin_isolation_floor.
func RawCypherRoute(name string, cfg RouteConfig) Option {
	return addRoute(name, KindRawCypher, cfg)
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

// problem is wiring the floor rules cannot express: what is wrong and
// exactly what to change.
type problem struct{ msg, fix string }

func (r *routeSpec) validate() []problem {
	var bad []problem
	if !validRouteName(r.name) {
		bad = append(bad, problem{fmt.Sprintf("route name %q: want 1 to 64 of [A-Za-z0-9_.-]", r.name),
			"rename the route: 1 to 64 letters, digits, '_', '.' or '-'"})
	}
	switch {
	case r.kind == KindRawCypher && r.cfgDepth != 0:
		bad = append(bad, problem{fmt.Sprintf("MaxDepth %d on a raw Cypher route: it caps structured traversals only", r.cfgDepth),
			"leave neo4j.RouteConfig.MaxDepth 0 on a RawCypherRoute: a raw statement states its own depth"})
	case r.cfgDepth < 0 || r.cfgDepth > MaxMaxDepth:
		bad = append(bad, problem{fmt.Sprintf("MaxDepth %d: want 1 to %d", r.cfgDepth, MaxMaxDepth),
			fmt.Sprintf("set neo4j.RouteConfig.MaxDepth to a depth from 1 to %d, or leave it 0 for the default (%d)", MaxMaxDepth, DefaultMaxDepth)})
	}
	switch {
	case r.both:
		bad = append(bad, problem{"both DatabasePrefix and Database are set",
			"set one of neo4j.RouteConfig.DatabasePrefix (the usual one) and neo4j.RouteConfig.Database"})
	case r.prefix != "":
		if err := validPrefix(r.prefix); err != nil {
			bad = append(bad, problem{err.Error(), fmt.Sprintf(
				"set neo4j.RouteConfig.DatabasePrefix to 1 to %d characters of lower-case letters, digits, '.' or '-', starting with a letter and not with \"system\"", MaxDatabasePrefix)})
		}
	}
	return bad
}

// Module builds a Neo4j module: its wiring, checked during fx.New, and its
// routes, each provided under its route name. Nothing connects here.
func Module(name string, opts ...Option) fx.Option {
	cfg := &config{}
	for _, o := range opts {
		o(cfg)
	}
	mod := floors.Module{Name: name, Backend: Rules, Floor: cfg.floor, ConnBudget: cfg.budget}
	var errs []error
	seen := map[string]bool{}
	for _, r := range cfg.routes {
		mod.Routes = append(mod.Routes, r.floorsRoute(cfg.routed != nil))
		for _, p := range r.validate() {
			errs = append(errs, Rules.WiringInvalid(name, r.name, p.msg, p.fix))
		}
		if seen[r.name] {
			errs = append(errs, Rules.WiringInvalid(name, r.name, "two routes share the name", "give every route of a module its own name"))
		}
		seen[r.name] = true
	}
	if e := Rules.StaticInTenantSpace(name, "", "database", cfg.database, databaseSpace, "the database of neo4j.Database(name)"); e != nil {
		errs = append(errs, e)
	}
	if cfg.routed != nil {
		mod.WorstCaseConns = cfg.routed.worstCase()
		errs = append(errs, cfg.routed.validate(name)...)
	}
	migErrs, migPart, latest := migrationParts(name, cfg)
	errs = append(errs, migErrs...)
	verErrs, verPart := versionWiring(name, cfg, latest)
	errs = append(errs, verErrs...)
	if len(errs) > 0 {
		// Reported by the app's check with every other module's violations;
		// what the module would have provided fails with that refusal.
		var provided []modules.Provided
		for _, r := range cfg.routes {
			provided = append(provided, modules.Provided{Type: r.providedType(), Name: r.name})
		}
		if cfg.migrations != nil {
			provided = append(provided, modules.Provided{Type: reflect.TypeFor[*Migrator](), Name: name})
		}
		return fx.Module(name, modules.ProvideRefused(mod, errs, provided...))
	}
	parts := []fx.Option{modules.Provide(mod), fx.Provide(fx.Private, newCore(name, cfg))}
	for _, r := range cfg.routes {
		parts = append(parts, provideRoute(r))
	}
	for _, p := range []fx.Option{migPart, verPart} {
		if p != nil {
			parts = append(parts, p)
		}
	}
	return fx.Module(name, parts...)
}

// providedType is the type the route is provided as.
func (r *routeSpec) providedType() reflect.Type {
	if r.kind == KindRawCypher {
		return reflect.TypeFor[*RawCypher]()
	}
	return reflect.TypeFor[*Graph]()
}

func provideRoute(spec *routeSpec) fx.Option {
	tag := fx.ResultTags(`name:"` + spec.name + `"`)
	if spec.kind == KindRawCypher {
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
}

func (c *core) routed() bool { return c.pools != nil }

type coreIn struct {
	fx.In
	Lifecycle fx.Lifecycle
	Driver    drv.DriverWithContext `optional:"true"`
}

func newCore(module string, cfg *config) func(coreIn) (*core, error) {
	return func(in coreIn) (*core, error) {
		c := &core{module: module, database: cfg.database, gate: migrate.NewGate(module, Rules.Name, cfg.required)}
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
				return nil, Rules.WiringInvalid(module, "", "building the driver: "+err.Error(), "check the URI passed to neo4j.Connect")
			}
			c.plain = newRealDriver(d)
			in.Lifecycle.Append(fx.StopHook(func(ctx context.Context) error { return d.Close(ctx) }))
		case in.Driver != nil:
			c.plain = newRealDriver(in.Driver)
		default:
			return nil, Rules.WiringInvalid(module, "", "the module has no Neo4j driver",
				"pass neo4j.Driver(d), neo4j.Connect(uri, auth) or neo4j.Routed(resolve, cfg), or provide a neo4j.DriverWithContext in the graph")
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
