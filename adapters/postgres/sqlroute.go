package postgres

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// SQLConfig wires a SQL route: the service's own statements (sqlc's
// generated code, hand-written pgx) over its own tables, which its
// migrations create in each tenant's schema or database.
type SQLConfig struct {
	// Origin says who writes the statements: tenancy.Compiled (sqlc, a
	// query builder: needs namespace) or tenancy.Raw (hand-written
	// strings: needs dedicated). It must be declared: the zero value,
	// Structured, is refused with statement_origin_unknown, since the
	// framework wrote none of this text.
	Origin tenancy.Origin
	// Login, on a plain client, runs each tenant's statements on
	// connections that log in as the tenant's own role, whose search
	// path is its schema (see DynamicLogin): the server, not the text,
	// keeps the tenant in its schema. Required unless the client is routed
	// (postgres_sql_unconfined); refused on a routed client, whose
	// sessions log in with the tenant's own credentials and the tenant's
	// schema of its database as their search path.
	Login *DynamicLogin
	// MaxConns sizes each tenant's login pool (default 4). It counts
	// toward the module's worst-case connections, times Login.MaxClients.
	MaxConns int32
}

const defaultSQLConns = 4

// SQLRoute adds a SQL route and provides *SQL, whose methods are pgx's
// (the DBTX interface sqlc generates): queries.New(route) just works.
func SQLRoute(name string, sc SQLConfig) Option {
	if sc.MaxConns <= 0 {
		sc.MaxConns = defaultSQLConns
	}
	return modules.Own(func(c *config) {
		spec := &routeSpec{name: name, kind: kindSQL, origin: sc.Origin, tenantRole: true,
			typ:  reflect.TypeFor[*SQL](),
			rels: []roleRel{{"schema", naming.PerTenant("(tenant schema)")}}}
		if sc.Origin == tenancy.Structured {
			c.errs = append(c.errs, &tenancy.Error{Code: tenancy.CodeStatementOriginUnknown, Module: c.name, Backend: rules.Name, Route: name,
				Detail: "a SQL route's statements are the service's own, so their origin must be declared",
				Fix:    "set SQLConfig.Origin to tenancy.Compiled (sqlc, a query builder) or tenancy.Raw (hand-written strings)"})
		}
		if sc.Login != nil {
			dl := *sc.Login // the caller's value stays as it was
			if dl.MaxClients <= 0 {
				dl.MaxClients = defaultLoginPools
			}
			sc.Login = &dl
			spec.login, spec.ownedConns = dl.Secret, dl.MaxClients*int(sc.MaxConns)
			if len(dl.Secret) < minLoginSecret {
				c.errs = append(c.errs, rules.WiringInvalid(c.name, name, fmt.Sprintf("the login secret must hold at least %d bytes", minLoginSecret), "pass a random secret of 32 bytes or more, the same on every replica"))
			}
		}
		spec.provide = provideRoute(func(cl *Client) *SQL {
			s := &SQL{route: route{cl, spec}}
			if sc.Login != nil && cl.routed == nil {
				s.logins = cl.loginPoolsFrom(sc.Login, cl.sqlPoolConfig(sc.MaxConns))
				cl.sqlLogins.Store(s.logins)
			}
			need := spec.decision
			need.NeedsTenant = true // the text names the tenant's tables
			s.entry = modules.NewEntry(modules.GateOf(modules.GateSpec{Rules: rules, Module: cl.module, Route: spec.name, Decision: need,
				Suspensions: cl.suspensions, Telemetry: cl.tels[spec]}), s.reach, s.current)
			return s
		})
		c.routes = append(c.routes, spec)
	})
}

// sqlPoolConfig is a tenant login pool's settings: the module's, with
// maxConns connections. The statement cache is kept: a login pool's
// connections serve one tenant, so what they cache is the tenant's.
func (c *Client) sqlPoolConfig(maxConns int32) *pgxpool.Config {
	var cfg *pgxpool.Config
	switch {
	case c.cfg != nil:
		cfg = c.cfg.Copy()
	case c.pool != nil:
		cfg = c.pool.Config()
	default:
		return nil
	}
	cfg.MaxConns, cfg.MinConns = maxConns, 0
	return cfg
}

// SQL is a SQL route: pgx's method set, each call run for the context's
// tenant. At namespace (Login) the session user is the tenant's role and
// the search path its schema, so unqualified names resolve there and a
// name outside it is refused by the server. Routed (dedicated), the
// tenant's own database as its own user, with the search path its schema
// there. Inside a unit of work (InTx) the calls join its transaction.
type SQL struct {
	route
	// logins are the tenant login pools (nil on a routed client).
	logins *routing.Pools[*pgxpool.Pool]
	entry  *modules.Entry[reached]
}

// reach is the entry's step: the unit of work the context carries, else
// the tenant's login pool, else (routed) the tenant's database.
func (s *SQL) reach(ctx context.Context, tenant tenancy.ID) (reached, func(), error) {
	if u := unitOf(ctx); u != nil {
		if err := u.join(ctx, s.route); err != nil {
			return reached{}, nil, err
		}
		return reached{q: u.run, version: versionQuerier{u.run}}, nil, nil
	}
	open := s.c.conn
	if s.logins != nil {
		open = s.logins.AcquireFor
	}
	pool, release, err := open(ctx, tenant)
	if err != nil {
		return reached{}, nil, routing.AtRoute(err, s.spec.name)
	}
	return reached{q: pool, version: pool}, release, nil
}

// Exec runs sql for the bound tenant.
func (s *SQL) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, _, t, done, err := s.entry.Enter(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer done()
	return t.q.Exec(ctx, sql, args...)
}

// Query runs sql for the bound tenant; the call ends when the rows close.
func (s *SQL) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, _, t, done, err := s.entry.Enter(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.Query(ctx, sql, args...)
	if err != nil {
		done()
		return nil, err
	}
	return &sqlRows{Rows: rows, done: sync.OnceFunc(done)}, nil
}

// QueryRow runs sql for the bound tenant; the call ends at Scan.
func (s *SQL) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, _, t, done, err := s.entry.Enter(ctx)
	if err != nil {
		return errRow{err}
	}
	return sqlRow{row: t.q.QueryRow(ctx, sql, args...), done: done}
}

// batcher and copier are what SendBatch and CopyFrom need of a pool, a
// unit's transaction or a pgx.Tx.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}
type copier interface {
	CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error)
}

// SendBatch sends b for the bound tenant; the call ends when the results
// close.
func (s *SQL) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	ctx, _, t, done, err := s.entry.Enter(ctx)
	if err != nil {
		return errBatch{err}
	}
	return &sqlBatch{BatchResults: t.q.(batcher).SendBatch(ctx, b), done: sync.OnceFunc(done)}
}

// CopyFrom copies rows into the bound tenant's table.
func (s *SQL) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	ctx, _, t, done, err := s.entry.Enter(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	return t.q.(copier).CopyFrom(ctx, table, cols, src)
}

// Begin starts a transaction for the bound tenant (inside a unit of work,
// one that joins it); the call ends at its Commit or Rollback.
func (s *SQL) Begin(ctx context.Context) (pgx.Tx, error) {
	ctx, _, t, done, err := s.entry.Enter(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := t.q.Begin(ctx)
	if err != nil {
		done()
		return nil, err
	}
	return &sqlTx{Tx: tx, done: sync.OnceFunc(done)}, nil
}

type sqlRows struct {
	pgx.Rows
	done func()
}

func (r *sqlRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *sqlRows) Close() {
	r.Rows.Close()
	r.done()
}

type sqlRow struct {
	row  pgx.Row
	done func()
}

func (r sqlRow) Scan(dest ...any) error {
	defer r.done()
	return r.row.Scan(dest...)
}

type sqlBatch struct {
	pgx.BatchResults
	done func()
}

func (b *sqlBatch) Close() error {
	defer b.done()
	return b.BatchResults.Close()
}

type sqlTx struct {
	pgx.Tx
	done func()
}

func (t *sqlTx) Commit(ctx context.Context) error {
	defer t.done()
	return t.Tx.Commit(ctx)
}

func (t *sqlTx) Rollback(ctx context.Context) error {
	defer t.done()
	return t.Tx.Rollback(ctx)
}
