package postgres

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// Option configures a PostgreSQL module: the kit's shared options
// (modules.RequiredIsolation, modules.Migrations, ...) or this package's.
type Option = modules.Option

// takes is which of the kit's options a PostgreSQL module honours.
var takes = modules.Takes{Teardown: true, ConnBudget: true, Placements: true, Migrations: true}

type config struct {
	modules.Settings
	name    string
	dsn     string
	pool    *pgxpool.Pool
	resolve routing.Resolver
	routed  RoutedConfig
	// routedSet: Routed was given (its resolver may be nil, refused).
	routedSet bool
	prefix    string
	static    string
	// pooled: the module reaches PostgreSQL through a transaction pooler
	// (BehindTransactionPooler).
	pooled bool
	// namedOnly: provide route objects under their names only.
	namedOnly bool
	routes    []*routeSpec
	// workers are background readers over the module's routes (relays,
	// sweeps), each declared to enforcement.
	workers []workerSpec
	// hubs are the hub search routes declared so far (federated legs).
	hubs []hubLeg
	// life: migrations, required version and tenant registry.
	life lifecycle
	// recycle: RecycleAfter's tenants per connection (recycleSet: given).
	recycle    int
	recycleSet bool
	// placed: set on the module of one placement.
	placed *modules.Placement
	// rowSecurity: RowSecurity.
	rowSecurity bool
	errs        []error
}

// Connect makes the module open its own pool from dsn on first use and close
// it on stop. Parsing happens at wiring; connecting does not.
func Connect(dsn string) Option { return modules.Own(func(c *config) { c.dsn = dsn }) }

// Use runs the module on a pool the caller owns and closes.
func Use(p *pgxpool.Pool) Option { return modules.Own(func(c *config) { c.pool = p }) }

// Routed gives every tenant its own credentials (dedicated): resolve maps
// a tenant to a DSN (Credentials.Endpoint), optionally with a user,
// password and "database" param that override the DSN's.
func Routed(resolve routing.Resolver, rc RoutedConfig) Option {
	return modules.Own(func(c *config) { c.resolve, c.routed, c.routedSet = resolve, rc, true })
}

// SchemaPrefix sets the prefix of tenant schema and role names (default
// "tenant_"): lower-case letters, digits and _, at most 28 bytes.
func SchemaPrefix(p string) Option { return modules.Own(func(c *config) { c.prefix = p }) }

// StaticSchema sets the schema of the module's static tables (Table),
// default "public": every statement names it, whatever the session's
// search_path says.
func StaticSchema(s string) Option { return modules.Own(func(c *config) { c.static = s }) }

// NamedOnly provides every route object under its route name only, for
// apps with two modules holding document routes of the same type.
func NamedOnly() Option { return modules.Own(func(c *config) { c.namedOnly = true }) }

// routeSpec is one route's wiring and what it needs at run time.
type routeSpec struct {
	name        string
	kind        floors.Kind
	tenantAware bool
	rels        []roleRel
	origin      tenancy.Origin
	tenantRole  bool
	// decision is the rules' decision for the route (set by Module): the
	// only source of its runtime scope.
	decision floors.Decision
	// ddl lists the statements that create the route's relations.
	ddl func(c *Client, tenant tenancy.ID) []string
	// provide contributes the route object; unnamed when its type is the
	// only one of its kind in the module.
	provide func(name string, unnamed bool) fx.Option
	typ     reflect.Type
	// object builds the route object for the module's workers (a relay's
	// source, a sweep's target); nil when no worker can drain the kind.
	object func(*Client) any
	// ownedConns: connections the route opens beside the module's pool
	// on a plain client (a dynamic read's own pool).
	ownedConns int
	// login: a dynamic read logs in as the tenant's role, with passwords
	// derived from this secret.
	login []byte
	// scopedRoles marks relations that separate tenants by themselves
	// (federated search legs).
	scopedRoles map[string]bool
	// rowSecure: the route's tagged tables are under row security
	// (RowSecurity), and its calls set their tenant for it.
	rowSecure bool
	// placedProvide provides the route object of a module with
	// Placements (placed.go); nil for a kind that cannot be placed.
	placedProvide func(module, route string, o modules.Offer, subs map[tenancy.Tier]string, unnamed bool) fx.Option
}

type roleRel struct {
	role string
	rel  naming.Name
}

func (r *routeSpec) floorsRoute(routed bool) floors.Route {
	fr := floors.Route{Name: r.name, Kind: r.kind, TenantAware: r.tenantAware, Routed: routed, Origin: r.origin}
	for _, rr := range r.rels {
		fr.Relations = append(fr.Relations, floors.Relation{Role: rr.role, Name: rr.rel.Base(), PerTenant: rr.rel.PerTenant(), Scoped: r.scopedRoles[rr.role]})
	}
	return fr
}

// Module is a PostgreSQL module: its client, its routes provided into the
// graph, and its wiring checked during fx.New. It provides *Client as
// name:"<name>" and each route object as name:"<route>"; a document route
// is also provided unnamed (*Documents[T]) when it is the module's only one
// of its type, unless NamedOnly is set.
func Module(name string, opts ...Option) fx.Option {
	cfg := &config{name: name, prefix: defaultSchemaPrefix, static: defaultStaticSchema}
	errs := modules.Configure(rules, name, cfg, takes, opts)
	if cfg.Offer != nil {
		return placedModule(name, opts, cfg, errs)
	}
	cfg.errs = append(cfg.errs, errs...)
	return module(cfg)
}

// module is Module once its options are applied.
func module(cfg *config) fx.Option {
	name := cfg.name
	routed := cfg.resolve != nil
	spec := modules.Spec{Name: name, Rules: rules, Floor: cfg.Floor, ConnBudget: cfg.ConnBudget,
		SourceFix: "pass exactly one of postgres.Connect, postgres.Use and postgres.Routed",
		Problems:  append(cfg.namingProblems(), cfg.errs...)}
	if cfg.placed != nil {
		spec.Placement = cfg.placed.At
	}
	for _, set := range []bool{cfg.dsn != "", cfg.pool != nil, cfg.routedSet} {
		if set {
			spec.Sources++
		}
	}
	if cfg.placed != nil && spec.Sources == 0 {
		spec.SourceFix = "" // the placed module names the missing server
	}
	build, conns, errs := cfg.connection()
	spec.WorstCaseConns = conns
	spec.Problems = append(spec.Problems, errs...)
	types := map[reflect.Type]int{}
	for _, r := range cfg.routes {
		types[r.typ]++
		if !routed {
			spec.WorstCaseConns += r.ownedConns
		}
	}
	// Only a document route is also provided unnamed (its type names its
	// values, so it rarely collides), when no other route of the module
	// has its type; NamedOnly turns that off.
	alsoUnnamed := func(r *routeSpec) bool {
		return r.kind == kindDocument && types[r.typ] == 1 && !cfg.namedOnly && cfg.placed == nil
	}
	for _, r := range cfg.routes {
		fr := r.floorsRoute(routed)
		r.decision = rules.Decide(fr)
		r.rowSecure = cfg.rowSecurity && r.decision.Tagged && (r.kind == kindDocument || r.kind == kindCounter) && slices.ContainsFunc(r.rels, r.guarded)
		// A placement's route objects are the placed module's to provide
		// (placed.go): under a private name here.
		as := r.name
		if cfg.placed != nil {
			as = modules.PlacedRouteName(name, r.name)
		}
		rs := modules.RouteSpec{Route: fr, Provide: r.provide(as, alsoUnnamed(r)), Provided: []modules.Provided{{Type: r.typ, Name: as}}}
		if alsoUnnamed(r) {
			rs.Provided = append(rs.Provided, modules.Provided{Type: r.typ})
		}
		spec.Routes = append(spec.Routes, rs)
		spec.Problems = append(spec.Problems, cfg.routeProblems(r, routed)...)
		spec.Problems = append(spec.Problems, cfg.checkPlaced(r)...)
	}
	spec.Problems = append(spec.Problems, cfg.rowSecurityProblems(routed)...)
	for _, w := range cfg.workers {
		spec.Problems = append(spec.Problems, w.check(name, cfg.routes)...)
		spec.Workers = append(spec.Workers, modules.WorkerSpec{Worker: w.decl(name), Run: w.run(name, cfg.routes, cfg.placed)})
	}
	spec.Parts = []fx.Option{
		fx.Provide(fx.Private, func(lc fx.Lifecycle, lin modules.LifecycleIn) *Client {
			c := &Client{module: name, prefix: cfg.prefix, static: cfg.static, teardown: cfg.Teardown, pooled: cfg.pooled, routes: cfg.routes, life: cfg.life.forClient(name), suspensions: lin.Suspensions}
			if cfg.guards() {
				c.rowRole = rowSecurityRole(cfg.prefix)
			}
			c.instrument(lin.Telemetry)
			c.enterBy()
			lin.Telemetry.ObserveBehind(name, rules.Name, c.life.gate.Behind)
			for _, b := range build {
				b(c)
			}
			c.Runner = c.runner()
			lc.Append(fx.StopHook(c.close))
			return c
		}),
		fx.Provide(fx.Annotate(func(c *Client) *Client { return c }, fx.ResultTags(`name:"`+name+`"`))),
		modules.ProvideLifecycleAt(name, rules.Name, true, func(c *Client) *migrate.Runner { return c.Runner }, cfg.placed),
		modules.ProvideServerCheck(name, rules.Name, func(c *Client) bool { return c.routed != nil },
			func(ctx context.Context, c *Client) error { return c.ping(ctx) }),
	}
	lifecycleWiring(&spec, cfg, routed)
	spec.Provided = []modules.Provided{{Type: reflect.TypeFor[*Client](), Name: name}, {Type: reflect.TypeFor[*migrate.Runner](), Name: name}}
	return modules.Assemble(spec)
}

// namingProblems checks the module's schema names.
func (cfg *config) namingProblems() []error {
	var errs []error
	if err := checkPrefix(cfg.prefix); err != nil {
		errs = append(errs, rules.WiringInvalid(cfg.name, "", err.Error(), "use a short lower-case prefix"))
	}
	if err := validName(cfg.static, maxIdent); err != nil {
		errs = append(errs, rules.WiringInvalid(cfg.name, "", "static schema: "+err.Error(), "name the schema of the static tables in lower case"))
	} else if e := rules.StaticInTenantSpace(cfg.name, "", "static schema", cfg.static, schemaSpace, "the schema of postgres.StaticSchema"); e != nil {
		errs = append(errs, e)
	}
	for _, r := range cfg.routes {
		for _, rr := range r.rels {
			if e := rules.ReservedName(cfg.name, r.name, "table", rr.rel.Base()); e != nil {
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// connection is how the module's client reaches the server (applied to
// each app's Client), the most connections it can open, and what is wrong
// with its connection options.
func (cfg *config) connection() (build []func(*Client), conns int, errs []error) {
	name := cfg.name
	if cfg.routedSet {
		errs = modules.CheckRouted(rules, name, "postgres.Routed", cfg.resolve, cfg.routed.Limits)
	}
	switch {
	case cfg.resolve != nil:
		cfg.routed.Limits = cfg.routed.WithDefaults(4)
		if cfg.routed.MaxConnsPerClient > math.MaxInt32 {
			errs = append(errs, rules.WiringInvalid(name, "", fmt.Sprintf("RoutedConfig.MaxConnsPerClient %d exceeds a pgx pool's limit", cfg.routed.MaxConnsPerClient),
				"set RoutedConfig.MaxConnsPerClient to at most 2147483647 (a few per tenant is typical)"))
			cfg.routed.MaxConnsPerClient = 4
		}
		resolve := withOwner(cfg.resolve)
		if cfg.hasSQLRoute() {
			resolve = withSearchPath(resolve, cfg.prefix)
		}
		rc := routing.Config[*pgxpool.Pool]{
			Resolve:    resolve,
			Read:       readRouted(name, int32(cfg.routed.MaxConnsPerClient), cfg.routed.Configure, cfg.pooled),
			Close:      closeRouted,
			Identify:   identifyRouted,
			TargetNoun: "database",
			Module:     name,
			Backend:    rules.Name,
			Limits:     cfg.routed.Limits,
		}
		build = append(build, func(c *Client) { c.routed, _ = routing.New(rc) }) // rc is complete: New cannot fail
		conns = cfg.routed.MaxClients * cfg.routed.MaxConnsPerClient
	case cfg.dsn != "":
		pc, err := pgxpool.ParseConfig(cfg.dsn)
		if err != nil {
			errs = append(errs, rules.WiringInvalid(name, "", "DSN: "+err.Error(), "pass a valid PostgreSQL DSN"))
		} else if err := pooledConfig(cfg.pooled, pc.ConnConfig, cfg.dsn); err != nil {
			errs = append(errs, rules.WiringInvalid(name, "", "DSN: "+err.Error(), "drop default_query_exec_mode from the DSN, or name cache_describe, exec or simple_protocol"))
		} else {
			build = append(build, func(c *Client) {
				c.cfg, c.ownPool = pc.Copy(), true
				if n := cfg.recycleLimit(); n > 0 {
					c.served = newTenantsServed(n)
					c.served.install(c.cfg)
				}
			})
			conns = int(pc.MaxConns)
		}
	case cfg.pool != nil:
		if cfg.pooled && cfg.pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeDescribeExec {
			errs = append(errs, rules.WiringInvalid(name, "", "Pool: "+errDescribeExecPooled.Error(),
				"set the pool's ConnConfig.DefaultQueryExecMode to QueryExecModeCacheDescribe or QueryExecModeExec"))
		}
		build = append(build, func(c *Client) { c.pool = cfg.pool })
		conns = int(cfg.pool.Config().MaxConns)
	}
	return build, conns, append(errs, cfg.recycleProblems()...)
}

// routeProblems is what the rules cannot say about a route's dynamic read.
func (cfg *config) routeProblems(r *routeSpec, routed bool) []error {
	var errs []error
	if routed && r.login != nil {
		errs = append(errs, rules.WiringInvalid(cfg.name, r.name, "Login applies to a plain client; a routed client logs in as the tenant already", "drop DynamicReadConfig.Login"))
	}
	if r.kind == kindSQL && routed && cfg.pooled {
		// The tenant schema's search path is a startup parameter of the
		// tenant's sessions (searchPathParam), which a transaction pooler
		// refuses or drops: the route's unqualified names would not
		// resolve in the tenant's schema.
		floor, _ := r.origin.Floor()
		errs = append(errs, &tenancy.Error{
			Code: CodeSQLSearchPathPooled, Module: cfg.name, Backend: rules.Name, Route: r.name,
			Tiers: true, Reached: tenancy.Dedicated, Required: max(floor, cfg.Floor), Ceiling: rules.Ceiling, Origin: r.origin,
			Detail: "on a routed client a SQL route's sessions log in with the tenant's schema as their search path (a startup parameter), which a transaction pooler refuses or does not keep per server session",
			Fix:    "reach the tenants' databases directly or through a session pooler (drop BehindTransactionPooler), or wire the SQL route at namespace on a plain client with SQLConfig.Login, whose search path the server sets per role",
		})
	}
	if r.kind == kindSQL && !routed && r.login == nil {
		errs = append(errs, &tenancy.Error{
			Code: CodeSQLUnconfined, Module: cfg.name, Backend: rules.Name, Route: r.name,
			Detail: "the service's own SQL would run as the module's user, which reaches every tenant's schema",
			Fix:    "set SQLConfig.Login (the tenant's statements run logged in as its own role) or run the module on a routed client",
		})
	}
	// Without a per-tenant schema the origin floor refuses the route
	// already, and that is the error to report.
	if r.kind == kindDynamicRead && !routed && !r.tenantRole && r.decision.NeedsTenant {
		errs = append(errs, &tenancy.Error{
			Code: CodeDynamicReadUnconfined, Module: cfg.name, Backend: rules.Name, Route: r.name,
			Detail: "compiled SQL in a per-tenant schema without a per-tenant role could name another tenant's schema",
			Fix:    "set TenantRole: true (provisioning creates the role) or run the module on a routed client",
		})
	}
	if r.kind == kindDynamicRead && cfg.pooled && !routed && r.login == nil {
		errs = append(errs, &tenancy.Error{
			Code: CodeDynamicReadPooled, Module: cfg.name, Backend: rules.Name, Route: r.name,
			Detail: "behind a transaction pooler a dynamic read's server session passes to other clients (other tenants, the module's own statements) between transactions, so its connections cannot serve one tenant each",
			Fix:    "set DynamicReadConfig.Login (each tenant's reads then run in server sessions of its own role), run the module on a routed client, or give the dynamic read a module that reaches PostgreSQL directly or through session pooling",
		})
	}
	return errs
}

// provideRoute builds the standard provide function for a route object.
func provideRoute[R any](build func(*Client) R) func(string, bool) fx.Option {
	return func(name string, unnamed bool) fx.Option {
		opts := []fx.Option{fx.Provide(fx.Annotate(build, fx.ResultTags(`name:"`+name+`"`)))}
		if unnamed {
			opts = append(opts, fx.Provide(fx.Annotate(func(r R) R { return r }, fx.ParamTags(`name:"`+name+`"`))))
		}
		return fx.Options(opts...)
	}
}
