package mongo

import (
	"context"
	"fmt"
	"reflect"

	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Option configures a MongoDB module.
type Option = modules.Option

// takes is which of the kit's options a MongoDB module honours.
var takes = modules.Takes{Teardown: true, ConnBudget: true, FromGraph: true, Placements: true, Migrations: true}

type config struct {
	modules.Settings
	client   *driver.Client
	uri      string
	database string
	routed   *routedConfig
	routes   []*routeSpec
	relays   []relaySpec
	// fromGraph: FromGraph.
	// goSteps: GoSteps.
	goSteps []GoStep
	// placed: set on the module of one placement; errs: the module's
	// refusals (a placement's: the placed module's, for the first).
	placed *modules.Placement
	errs   []error
}

// RouteConfig wires one route.
type RouteConfig struct {
	// TenantAware stamps a tenant_id field on every write and places it in
	// every filter, update and delete (tagged).
	TenantAware bool
	// Collection is where the route's documents live: naming.Shared(name),
	// or naming.PerTenant(base) for a collection per tenant (namespace),
	// named CollectionName(base, tenant).
	Collection naming.Name
	// Database, when naming.PerTenant(prefix), puts the collection in a
	// database per tenant, named DatabaseName(prefix, tenant) (namespace).
	// Zero: the module's database.
	Database naming.Name
	// TextIndex (search routes only) queries with $text over a MongoDB
	// text index instead of the portable term index. FerretDB 1.x has no
	// text index.
	TextIndex bool
}

type routeSpec struct {
	name string
	kind floors.Kind
	cfg  RouteConfig
	coll collection
	// provide gives the route to the app; provides names what it gives,
	// which a refused module provides in its place.
	provide  fx.Option
	provides []modules.Provided
	// placedProvide provides the route object of a module with
	// Placements (placed.go); nil for a kind that cannot be placed.
	placedProvide func(module, route string, o modules.Offer, subs map[tenancy.Tier]string) fx.Option
}

// Use runs the module on c, a client the caller owns and disconnects.
func Use(c *driver.Client) Option { return modules.Own(func(cfg *config) { cfg.client = c }) }

// Connect makes the module build its own client from uri (the driver dials
// lazily) and disconnect it on stop.
func Connect(uri string) Option { return modules.Own(func(cfg *config) { cfg.uri = uri }) }

// Database names the module's database (required): static and per-tenant
// collections live in it, and routed clients use it unless a tenant's
// credentials carry Params["database"].
func Database(name string) Option { return modules.Own(func(cfg *config) { cfg.database = name }) }

// RoutedConfig opens a client per tenant from the tenant's own URI and
// credentials (dedicated), through routing.Pools: fingerprinted, bounded,
// evictable.
type RoutedConfig struct {
	// Limits bound the clients; MaxConnsPerClient is each client's
	// connection pool maximum (default 100, the driver's).
	routing.Limits
	// ClientOptions adjusts each tenant's client options (timeouts); it
	// must not connect.
	ClientOptions func(*options.ClientOptions)
}

// limits are the routed limits with the defaults filled in.
func (rc *RoutedConfig) limits() routing.Limits { return rc.WithDefaults(100) }

// Routed runs every route on the tenant's own client (dedicated). resolve
// returns a tenant's credentials: Endpoint is a mongodb:// URI, User and
// Secret authenticate (when User is set), and Params["database"]
// overrides the module's database.
func Routed(resolve routing.Resolver, rc RoutedConfig) Option {
	return modules.Own(func(cfg *config) { cfg.routed = &routedConfig{resolve: resolve, RoutedConfig: rc} })
}

type routedConfig struct {
	resolve routing.Resolver
	RoutedConfig
}

// namedRoute adds a route whose runtime object ctor builds; it is
// provided under the route's name (name:"<route>").
func namedRoute[R any](name string, kind floors.Kind, rc RouteConfig, ctor func(route) R) Option {
	return modules.Own(func(cfg *config) {
		// A spec per application: Placements applies the option once per
		// placement.
		rc := cfg.inShared(rc)
		as := modules.PlacedName(cfg.placed, name)
		spec := &routeSpec{name: name, kind: kind, cfg: rc, coll: collectionOf(rc), provides: []modules.Provided{{Type: reflect.TypeFor[R](), Name: as}}}
		spec.provide = fx.Provide(fx.Annotate(
			func(c *core) R { return ctor(newRoute(c, spec)) },
			fx.ResultTags(`name:"`+as+`"`)))
		cfg.routes = append(cfg.routes, spec)
	})
}

// placeableRoute is namedRoute for a kind a module with placements can
// place: wrap makes the placed module's route object from its
// placements' objects.
func placeableRoute[R any](name string, kind floors.Kind, rc RouteConfig, ctor func(route) R, wrap func(*modules.PlacedRoute[R]) R) Option {
	add := namedRoute(name, kind, rc, ctor)
	return modules.Own(func(c *config) {
		add.ApplyOption(c)
		c.routes[len(c.routes)-1].placedProvide = func(module, route string, o modules.Offer, subs map[tenancy.Tier]string) fx.Option {
			return modules.ProvidePlaced(rules.Name, module, route, o, subs, false, wrap)
		}
	})
}

func (r *routeSpec) floorsRoute(routed bool) floors.Route {
	rels := []floors.Relation{r.coll.relation(roleCollection)}
	if r.kind == kindSearch {
		// The index is named inside its collection; it never counts.
		rels = append(rels, floors.Relation{Role: roleIndex, Name: r.name + "_terms", PerTenant: false})
	}
	return floors.Route{Name: r.name, Kind: r.kind, TenantAware: r.cfg.TenantAware, Routed: routed, Relations: rels}
}

func (cfg *config) validate(module string) []error {
	var errs []error
	if err := ValidDatabaseName(cfg.database); err != nil {
		errs = append(errs, rules.WiringInvalid(module, "", err.Error(), "pass mongo.Database(name) with a valid name"))
	} else if e := rules.StaticInTenantSpace(module, "", "database", cfg.database, dbSpace, "the database of mongo.Database(name)"); e != nil {
		errs = append(errs, e)
	}
	if cfg.routed != nil {
		errs = append(errs, modules.CheckRouted(rules, module, "mongo.Routed", cfg.routed.resolve, cfg.routed.Limits)...)
	}
	for _, r := range cfg.routes {
		if err := validBase("route name", r.name, 64); err != nil {
			errs = append(errs, rules.WiringInvalid(module, r.name, err.Error(), "rename the route"))
		}
		if err := r.coll.validate(); err != nil {
			errs = append(errs, rules.WiringInvalid(module, r.name, err.Error(), "rename the collection (and the per-tenant database prefix): letters, digits, '-' and '_', not starting with \"system\" or \"_ferretdb_\"; the error names the length limit"))
		} else if e := rules.ReservedName(module, r.name, "collection", r.coll.name); e != nil {
			// The migration history lives beside the route's collections.
			errs = append(errs, e)
		}
		if r.cfg.TextIndex && r.kind != kindSearch {
			errs = append(errs, rules.WiringInvalid(module, r.name, "TextIndex applies to search routes only", "drop TextIndex"))
		}
	}
	return errs
}

// sources counts the client sources the options name.
func (cfg *config) sources() int {
	n := 0
	for _, set := range []bool{cfg.client != nil, cfg.uri != "", cfg.routed != nil, cfg.FromGraph} {
		if set {
			n++
		}
	}
	return n
}

// Module builds a MongoDB module: its wiring, checked during fx.New, and
// its routes. Document routes are provided as *Documents[T]; the others
// under their route name (name:"<route>"); the module's *Provisioner
// under the module's name.
func Module(name string, opts ...Option) fx.Option {
	cfg := &config{}
	errs := modules.Configure(rules, name, cfg, takes, opts)
	if cfg.Offer != nil {
		return placedModule(name, opts, cfg, errs)
	}
	cfg.errs = append(cfg.errs, errs...)
	return module(name, cfg)
}

// module is Module for the options applied to cfg.
func module(name string, cfg *config) fx.Option {
	set, bad := cfg.Load("json")
	m, err := loadMigrations(name, cfg.routes, set, cfg.goSteps)
	if err != nil {
		m = &migrations{}
		bad = append(bad, tenancy.Problem{Detail: err.Error(), Fix: "name each file <version>_<name>.json (an index step on a route of the module), versions unique across files and Go steps"})
	}
	spec := modules.Spec{Name: name, Rules: rules, Floor: cfg.Floor, ConnBudget: cfg.ConnBudget,
		Sources: cfg.sources(), SourceFix: "pass exactly one of mongo.Use(c), mongo.Connect(uri), mongo.Routed(resolve, cfg) and modules.FromGraph()",
		Problems: append(cfg.validate(name), cfg.errs...),
		Parts: []fx.Option{
			fx.Provide(fx.Private, newCore(name, cfg, m)),
			// Named by the module, so that an app may hold several MongoDB modules.
			modules.ProvideLifecycleAt(name, rules.Name, true, func(c *core) *migrate.Runner {
				return (&lifecycleTarget{core: c, routes: cfg.routes, teardown: cfg.Teardown}).runner(cfg.Registry)
			}, cfg.placed),
			fx.Provide(fx.Annotate(func(c *core, r *migrate.Runner) *Provisioner { return &Provisioner{Runner: r, core: c} },
				fx.ParamTags(``, `name:"`+name+`"`), fx.ResultTags(`name:"`+name+`"`))),
			modules.ProvideServerCheck(name, rules.Name, func(c *core) bool { return c.client == nil },
				func(ctx context.Context, c *core) error { return c.client.Ping(ctx, nil) }),
		},
		Provided: []modules.Provided{{Type: reflect.TypeFor[*Provisioner](), Name: name}, {Type: reflect.TypeFor[*migrate.Runner](), Name: name}},
	}
	if cfg.routed != nil {
		spec.WorstCaseConns = cfg.routed.limits().MaxClients * cfg.routed.limits().MaxConnsPerClient
	}
	if cfg.placed != nil {
		spec.Placement = cfg.placed.At
	}
	modules.AddVersions(&spec, modules.Versions[*core]{Versioning: cfg.Versioning, Latest: m.set.Latest(), PerTenant: true,
		Invalid: bad, Gate: func(c *core) *migrate.Gate { return c.gate }})
	for _, r := range cfg.routes {
		spec.Routes = append(spec.Routes, modules.RouteSpec{Route: r.floorsRoute(cfg.routed != nil), Provide: r.provide, Provided: r.provides})
		spec.Problems = append(spec.Problems, cfg.checkPlaced(name, r)...)
	}
	for _, r := range cfg.relays {
		spec.Problems = append(spec.Problems, r.problems(name, cfg.routes)...)
		spec.Workers = append(spec.Workers, modules.WorkerSpec{Worker: r.decl(name), Run: r.run(name, cfg.placed)})
	}
	return modules.Assemble(spec)
}

// core is a module's connection state, private to the module.
type core struct {
	module string
	db     string
	client *driver.Client
	pools  *routing.Pools[*routedClient]
	routes []*routeSpec
	// migrations is the Migrations option's set; gate refuses calls for
	// tenants behind RequiredVersion (nil: no check).
	migrations *migrations
	gate       *migrate.Gate
	// tenants refuses a suspended tenant's calls (nil: no lifecycle).
	suspensions *modules.Suspensions
	// tel records route calls (nil: the app gave no telemetry).
	tel *telemetry.Telemetry
}

type clientIn struct {
	fx.In
	Lifecycle fx.Lifecycle
	Client    *driver.Client `optional:"true"`
	modules.LifecycleIn
}

func newCore(module string, cfg *config, m *migrations) func(clientIn) (*core, error) {
	return func(in clientIn) (*core, error) {
		c := &core{module: module, db: cfg.database, routes: cfg.routes, migrations: m, gate: migrate.NewGate(module, rules.Name, cfg.Required), suspensions: in.Suspensions, tel: in.Telemetry}
		in.Telemetry.ObserveBehind(module, rules.Name, c.gate.Behind)
		switch {
		case cfg.routed != nil:
			p, err := newPools(module, cfg.database, cfg.routed)
			if err != nil {
				return nil, err
			}
			c.pools = p
			in.Lifecycle.Append(fx.StopHook(p.Close))
		case cfg.client != nil:
			c.client = cfg.client
		case cfg.uri != "":
			cl, err := driver.Connect(options.Client().ApplyURI(cfg.uri))
			if err != nil {
				return nil, fmt.Errorf("mongo: module %s: %w", module, err)
			}
			c.client = cl
			in.Lifecycle.Append(fx.StopHook(cl.Disconnect))
		case in.Client != nil:
			c.client = in.Client
		default:
			return nil, rules.WiringInvalid(module, "", "modules.FromGraph is set and nothing in the app provides a *mongo.Client",
				"provide a *mongo.Client in the app, or pass mongo.Use(c) or mongo.Connect(uri) instead of FromGraph")
		}
		return c, nil
	}
}
