package postgres

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// readRouted is the routed pools' Read: it parses a tenant's DSN once,
// for both its targets (routedTargets) and its pool. Endpoint is a DSN;
// User and Secret, when set, override the DSN's. pgxpool.NewWithConfig
// does not connect. Every connection the pool opens asks its server who
// it is and must report what the pool's first connection did
// (pinnedServer). Behind a transaction pooler (pooled) the pool runs in a
// mode that prepares nothing named (pooledConfig).
func readRouted(module string, maxConns int32, configure func(*pgxpool.Config), pooled bool) func(routing.Credentials) (routing.Reading[*pgxpool.Pool], error) {
	return func(cr routing.Credentials) (routing.Reading[*pgxpool.Pool], error) {
		cfg, err := routedConfig(cr)
		if err != nil {
			return routing.Reading[*pgxpool.Pool]{}, err
		}
		searchPath := cr.Params[searchPathParam]
		pin := &pinnedServer{module: module, tenant: cr.Params[ownerParam]}
		open := func(ctx context.Context) (*pgxpool.Pool, error) {
			// The claims were read from cfg: open a copy of it, so what
			// Configure changes stays with this pool.
			return openRouted(ctx, cfg.Copy(), cr.Endpoint, pin, maxConns, configure, pooled, searchPath)
		}
		return routing.Reading[*pgxpool.Pool]{Targets: connTargets(cfg.ConnConfig), Open: open}, nil
	}
}

// openRouted opens a tenant's pool from its parsed DSN.
// A non-empty searchPath is sent at login, after Configure, so neither
// it nor the DSN can change it.
func openRouted(ctx context.Context, cfg *pgxpool.Config, dsn string, pin *pinnedServer, maxConns int32, configure func(*pgxpool.Config), pooled bool, searchPath string) (*pgxpool.Pool, error) {
	if err := pooledConfig(pooled, cfg.ConnConfig, dsn); err != nil {
		return nil, fmt.Errorf("postgres: routed credentials: %w", err)
	}
	if configure != nil {
		cc := cfg.ConnConfig
		host, port, db, fallbacks := cc.Host, cc.Port, cc.Database, len(cc.Fallbacks)
		configure(cfg)
		if cc = cfg.ConnConfig; cc.Host != host || cc.Port != port || cc.Database != db || len(cc.Fallbacks) != fallbacks {
			return nil, errors.New("postgres: RoutedConfig.Configure changed the pool's host, port or database")
		}
	}
	cfg.MaxConns = maxConns
	if searchPath != "" {
		if cfg.ConnConfig.RuntimeParams == nil {
			cfg.ConnConfig.RuntimeParams = map[string]string{}
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = searchPath
	}
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if err := pin.check(ctx, conn); err != nil {
			return err
		}
		if after != nil {
			return after(ctx, conn)
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), cfg)
	if err == nil {
		pins.Store(pool, pin)
	}
	return pool, err
}

// searchPathParam is the Credentials param withSearchPath sets: the
// search path of the tenant's sessions.
const searchPathParam = "tenantwire.search_path"

// withSearchPath is resolve for a module with a SQL route: each tenant's
// sessions log in with its schema (where the module's migrations create
// the service's tables in its database) as their only search path, so
// the route's unqualified names resolve there with no round trip of
// their own. The other routes name every relation schema-qualified, so
// the setting changes nothing of theirs. The param is part of the
// credentials' fingerprint: a pool is never shared by two search paths.
func withSearchPath(resolve routing.Resolver, prefix string) routing.Resolver {
	return withParam(resolve, searchPathParam, func(tenant tenancy.ID) string { return pgx.Identifier{SchemaName(prefix, tenant)}.Sanitize() })
}

// withParam is resolve with the credentials' param key set to value's
// for the tenant, on a copy of the resolver's params.
func withParam(resolve routing.Resolver, key string, value func(tenancy.ID) string) routing.Resolver {
	return func(ctx context.Context, tenant tenancy.ID) (routing.Credentials, error) {
		cr, err := resolve(ctx, tenant)
		if err != nil {
			return cr, err
		}
		params := make(map[string]string, len(cr.Params)+1)
		for k, v := range cr.Params {
			params[k] = v
		}
		params[key] = value(tenant)
		cr.Params = params
		return cr, nil
	}
}

// pins maps each open routed pool to its pinnedServer, so that Identify
// reads what the first connection reported instead of asking again.
var pins sync.Map // *pgxpool.Pool → *pinnedServer

// closeRouted closes a routed pool and forgets its pin.
func closeRouted(p *pgxpool.Pool) {
	pins.Delete(p)
	p.Close()
}

// routedConfig parses a tenant's DSN with its credentials' overrides.
func routedConfig(cr routing.Credentials) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(cr.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("postgres: routed credentials: %w", err)
	}
	cc := cfg.ConnConfig
	if cr.User != "" {
		cc.User = cr.User
	}
	if cr.Secret != "" {
		cc.Password = cr.Secret
	}
	if db := cr.Params["database"]; db != "" {
		cc.Database = db
	}
	return cfg, nil
}

// routedTargets names where a tenant's data may live: each host of the
// DSN's host list with its port, and the database the pool connects to.
// The server opens the database named after the user when none is given,
// so that is the name compared. User and password do not count otherwise:
// two roles on one database still share its tables. These names are a
// cheap first line; the server's identity (serverIdentitySQL) decides.
func routedTargets(cr routing.Credentials) ([]string, error) {
	cfg, err := routedConfig(cr)
	if err != nil {
		return nil, err
	}
	return connTargets(cfg.ConnConfig), nil
}

// connTargets is routedTargets of a parsed DSN.
func connTargets(cc *pgx.ConnConfig) []string {
	db := cc.Database
	if db == "" {
		if db = cc.User; db == "" {
			if u, err := user.Current(); err == nil { // libpq's default user
				db = u.Username
			}
		}
	}
	targets := []string{routing.CanonicalHostPort(cc.Host, strconv.Itoa(int(cc.Port))) + "/" + db}
	for _, f := range cc.Fallbacks { // more hosts, or TLS variants of one
		targets = append(targets, routing.CanonicalHostPort(f.Host, strconv.Itoa(int(f.Port)))+"/"+db)
	}
	return targets
}

// serverIdentitySQL is what a server says its connected database is: the
// cluster's system identifier (fixed at initdb, shared only by physical
// copies of the cluster, which hold the same data) and the database's oid.
// Not its name: ALTER DATABASE RENAME keeps the data under a new name,
// which would otherwise be a second identity of one database. Every role
// may call pg_control_system(); each name is schema-qualified so that no
// search_path reaches a look-alike. The two columns come back as they
// are: casting and joining them on the server cost a new backend more
// catalog lookups (some 0.07 ms of a cold query's 0.65 here). The third is
// the database's owner setting (ownerSetting), a setting every session
// starts with, so reading it costs no lookup.
const serverIdentitySQL = `SELECT s.system_identifier, d.oid, pg_catalog.current_setting('` + ownerSetting + `', true)
	FROM pg_catalog.pg_control_system() s, pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()`

func serverIdentity(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (string, error) {
	id, _, err := serverIdentityOwner(ctx, q)
	return id, err
}

// serverIdentityOwner is serverIdentity and the database's owner setting
// ("" when it has none), read in one query.
func serverIdentityOwner(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (string, string, error) {
	var system int64
	var oid uint32
	var owner *string
	// Asked once per connection, so not prepared: one round trip, and
	// nothing left in the connection's statement cache.
	if err := q.QueryRow(ctx, serverIdentitySQL, pgx.QueryExecModeSimpleProtocol).Scan(&system, &oid, &owner); err != nil {
		return "", "", fmt.Errorf("postgres: reading the server's identity (pg_control_system): %w", err)
	}
	id := strconv.FormatInt(system, 10) + "/" + strconv.FormatUint(uint64(oid), 10)
	if owner == nil {
		return id, "", nil
	}
	return id, *owner, nil
}

// identifyRouted is the routed pools' Identify: the identity the pool's
// connections report, pinned by the first one (each checked by
// pinnedServer). Acquiring a connection makes one if there is none.
func identifyRouted(ctx context.Context, p *pgxpool.Pool) (string, error) {
	conn, err := p.Acquire(ctx)
	if err != nil {
		return "", err
	}
	conn.Release()
	if pin, ok := pins.Load(p); ok {
		if id := pin.(*pinnedServer).id.Load(); id != nil {
			return *id, nil
		}
	}
	return serverIdentity(ctx, p) // a pool opened elsewhere: ask
}

// pinnedServer keeps a routed pool on the server database its first
// connection reached. A host list or a name that resolves elsewhere later
// would otherwise carry a pool, after its identity was claimed, to another
// tenant's database: such a connection is closed before any statement.
type pinnedServer struct {
	module string
	// tenant is the pool's: the database's owner setting, when it has
	// one, must name it.
	tenant string
	id     atomic.Pointer[string]
}

func (p *pinnedServer) check(ctx context.Context, conn *pgx.Conn) error {
	id, owner, err := serverIdentityOwner(ctx, conn)
	if err != nil {
		return err
	}
	if owner != "" && p.tenant != "" && owner != p.tenant {
		return &tenancy.Error{Code: tenancy.CodeDedicatedTargetShared, Module: p.module, Backend: rules.Name,
			Detail: fmt.Sprintf("the routed client is rated dedicated, but tenant %s resolves to a database whose setting %s records tenant %s as its owner; "+
				"the connection was closed before any statement", p.tenant, ownerSetting, owner),
			Fix: ownerFix}
	}
	if p.id.CompareAndSwap(nil, &id) {
		return nil
	}
	if pinned := *p.id.Load(); pinned != id {
		return &tenancy.Error{
			Code: tenancy.CodeDedicatedTargetShared, Module: p.module, Backend: rules.Name,
			Detail: fmt.Sprintf("a routed pool first reached server database %s and now connected to %s (a host list or a name that moved); "+
				"the connection was closed before any statement", pinned, id),
			Fix: "give each tenant's credentials hosts that all reach that tenant's one database",
		}
	}
	return nil
}
