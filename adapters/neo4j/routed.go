package neo4j

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	drvconfig "github.com/neo4j/neo4j-go-driver/v5/neo4j/config"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
)

type routedConfig struct {
	resolve routing.Resolver
	routing.Limits
}

// DefaultMaxConnsPerClient is the per-driver connection pool bound the
// routed driver sets (the Neo4j driver's own default is 100).
const DefaultMaxConnsPerClient = 16

// Routed gives every tenant its own driver, built from the credentials
// resolve returns (dedicated): Endpoint is the bolt/neo4j URI, User and
// Secret the basic-auth pair, and Params["database"] the database its
// sessions open (else the module's Database; "" for the server default). A driver serves one tenant,
// a tenant resolving to another tenant's server database is refused
// (dedicated_target_shared), and no tenant ever falls back to a shared one.
// limits bound the drivers, least recently used closed first; each
// driver's pool defaults to DefaultMaxConnsPerClient connections.
func Routed(resolve routing.Resolver, limits routing.Limits) Option {
	return modules.Own(func(c *config) {
		rc := &routedConfig{resolve: resolve, Limits: limits}
		if rc.MaxConnsPerClient == 0 {
			rc.MaxConnsPerClient = DefaultMaxConnsPerClient
		}
		c.routed = rc
	})
}

func (r *routedConfig) validate(module string) []error {
	return modules.CheckRouted(rules, module, "neo4j.Routed", r.resolve, r.Limits)
}

func (r *routedConfig) worstCase() int {
	l := r.WithDefaults(DefaultMaxConnsPerClient)
	return l.MaxClients * l.MaxConnsPerClient
}

// tenantDriver is one routed driver and the database its sessions open.
type tenantDriver struct {
	drv      driver
	database string
	// target is routedTarget of the credentials it was opened with.
	target string
}

type tenantPools = *routing.Pools[*tenantDriver]

func newPools(module string, cfg *config) (tenantPools, error) {
	rc := cfg.routed
	open := func(_ context.Context, c routing.Credentials) (*tenantDriver, error) {
		target, err := routedTarget(c, cfg.database)
		if err != nil {
			return nil, err
		}
		td := &tenantDriver{database: routedDatabase(c, cfg.database), target: target}
		if cfg.openFake != nil {
			td.drv = cfg.openFake(c.Endpoint)
			return td, nil
		}
		// NewDriverWithContext does not dial: the first session does.
		d, err := drv.NewDriverWithContext(c.Endpoint, drv.BasicAuth(c.User, c.Secret, ""),
			func(conf *drvconfig.Config) { conf.MaxConnectionPoolSize = rc.MaxConnsPerClient })
		if err != nil {
			return nil, fmt.Errorf("neo4j: building the tenant's driver: %w", err)
		}
		td.drv = newRealDriver(d)
		return td, nil
	}
	return routing.New(routing.Config[*tenantDriver]{
		Resolve: rc.resolve,
		Open:    open,
		Close:   func(td *tenantDriver) { _ = td.drv.Close(context.Background()) },
		Targets: func(c routing.Credentials) ([]string, error) {
			t, err := routedTarget(c, cfg.database)
			return []string{t}, err
		},
		Identify: func(ctx context.Context, td *tenantDriver) (string, error) {
			return td.drv.DatabaseID(ctx, td.database)
		},
		TargetNoun: "server database",
		Module:     module,
		Backend:    rules.Name,
		Limits:     rc.Limits,
	})
}

// routedDatabase is the database a tenant's sessions open:
// Params["database"], else the module's Database ("" the server's default).
// It is the one identified: naming another would let a tenant whose
// credentials name no database share the module's database with one whose
// credentials name it.
func routedDatabase(c routing.Credentials, moduleDB string) string {
	if db := c.Params["database"]; db != "" {
		return db
	}
	return moduleDB
}

// routedTarget is where a tenant's data lives: the server (canonical host
// and port; the URI scheme only picks routing and TLS) and routedDatabase,
// lower-cased as Neo4j compares database names, "" being the server's
// default database. Credentials do not count. A route's per-tenant
// database (RouteConfig.Database) is not part of it: on a
// routed driver the tenant's own server database is what dedicated
// promises. The name is a cheap first line (it cannot know which database
// "" is): the id the server reports for the database (identify) decides.
func routedTarget(c routing.Credentials, moduleDB string) (string, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("neo4j: routed endpoint is not a neo4j:// or bolt:// URI")
	}
	port := u.Port()
	if port == "" {
		port = "7687"
	}
	db := strings.ToLower(routedDatabase(c, moduleDB))
	if db == "system" {
		// The system database has an id of its own, so a claim on it does not
		// meet the claim of a tenant on a user database of the same server,
		// yet a query run there reaches that database with USE.
		return "", fmt.Errorf("neo4j: a routed tenant's database cannot be the server's system database")
	}
	return routing.CanonicalHostPort(u.Hostname(), port) + "/" + db, nil
}

// databaseID asks the server for the id of a database ("" the default):
// fixed when the database was created, the same under every spelling of
// server and database name.
func databaseID(ctx context.Context, d drv.DriverWithContext, database string) (string, error) {
	s := d.NewSession(ctx, drv.SessionConfig{DatabaseName: database, AccessMode: drv.AccessModeRead})
	defer func() { _ = s.Close(ctx) }()
	res, err := s.Run(ctx, "CALL db.info() YIELD id RETURN id", nil)
	var rec *drv.Record
	if err == nil {
		rec, err = res.Single(ctx)
	}
	if err != nil {
		return "", fmt.Errorf("neo4j: reading the database's id: %w", err)
	}
	id, ok := rec.Values[0].(string)
	if !ok || id == "" {
		return "", fmt.Errorf("neo4j: db.info() returned the id %v", rec.Values[0])
	}
	return id, nil
}
