package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// DynamicReadConfig wires a dynamic read: SQL text compiled per request by
// a trusted compiler (origin compiled, which needs namespace or better).
type DynamicReadConfig struct {
	// PerTenantSchema: the compiler targets the bound tenant's schema
	// (namespace). Without it only a routed client clears the origin floor.
	PerTenantSchema bool
	// TenantRole runs each read under the tenant's own role (set LOCAL
	// inside its transaction); the role has usage on the tenant's schema
	// only, so compiled text that names another tenant's schema is refused
	// by the server. Required unless the client is routed.
	TenantRole bool
	// MaxConns sizes the route's own pool on a plain client (default 2):
	// dynamic reads never share a connection with the module's other
	// statements. It counts toward the module's worst-case connections.
	MaxConns int32
	// Timeout bounds every statement of a read (statement_timeout, set
	// LOCAL by the route before the compiled text runs; default 30s).
	Timeout time.Duration
	// Login, on a plain client with TenantRole, runs each tenant's reads
	// on connections that log in as the tenant's role, so compiled text
	// cannot leave it (see DynamicLogin).
	Login *DynamicLogin
}

const (
	defaultDynamicConns   = 2
	defaultDynamicTimeout = 30 * time.Second
	// scrubTimeout bounds the clean-up after a read, which runs even when
	// the caller's context is done.
	scrubTimeout = 5 * time.Second
)

// DynamicReadRoute adds a dynamic-read route and provides *DynamicRead.
func DynamicReadRoute(name string, dc DynamicReadConfig) Option {
	if dc.MaxConns <= 0 {
		dc.MaxConns = defaultDynamicConns
	}
	if dc.Timeout <= 0 {
		dc.Timeout = defaultDynamicTimeout
	}
	return modules.Own(func(c *config) {
		spec := &routeSpec{name: name, kind: kindDynamicRead, origin: tenancy.Compiled, tenantRole: dc.TenantRole,
			typ:        reflect.TypeFor[*DynamicRead](),
			rels:       []roleRel{{"schema", nameOf("(tenant schema)", dc.PerTenantSchema)}},
			ownedConns: int(dc.MaxConns)}
		if dc.Login != nil {
			dl := *dc.Login // the caller's value stays as it was
			dc.Login = &dl
			if dl.MaxClients <= 0 {
				dl.MaxClients = defaultLoginPools
			}
			spec.login, spec.ownedConns = dl.Secret, dl.MaxClients*int(dc.MaxConns)
			switch {
			case !dc.TenantRole:
				c.errs = append(c.errs, rules.WiringInvalid(c.name, name, "Login logs in as the tenant's role, which only TenantRole creates", "set TenantRole: true"))
			case len(dl.Secret) < minLoginSecret:
				c.errs = append(c.errs, rules.WiringInvalid(c.name, name, fmt.Sprintf("the login secret must hold at least %d bytes", minLoginSecret), "pass a random secret of 32 bytes or more, the same on every replica"))
			}
		}
		spec.provide = provideRoute(func(cl *Client) *DynamicRead {
			d := &DynamicRead{route: route{cl, spec}, cfg: dc, own: cl.dynamicPool(dc.MaxConns)}
			if dc.Login != nil {
				d.logins = cl.loginPools(dc.Login, d.own)
			}
			// A dynamic read always runs for the bound tenant: its
			// compiled text names the tenant's schema.
			need := spec.decision
			need.NeedsTenant = true
			d.entry = modules.NewEntry(modules.GateOf(modules.GateSpec{Rules: rules, Module: cl.module, Route: spec.name, Decision: need,
				Suspensions: cl.suspensions, Telemetry: cl.tels[spec]}), d.acquire, nil)
			return d
		})
		c.routes = append(c.routes, spec)
	})
}

// DynamicRead runs compiled read-only SQL for the bound tenant.
type DynamicRead struct {
	route
	cfg DynamicReadConfig
	// own is the route's pool on a plain client; nil when routed.
	own *tenantPool
	// logins are the per-tenant login pools (DynamicLogin); nil without.
	logins *routing.Pools[*pgxpool.Pool]
	// entry admits each read (the route's gate) and reaches a connection
	// that serves the tenant only.
	entry *modules.Entry[dynConn]
}

// dynConn is what a read's entry reaches: the tenant's connection, and
// put, which hands it back (kept when reuse is true, closed otherwise).
type dynConn struct {
	conn *pgx.Conn
	put  func(reuse bool)
}

// Schema is the bound tenant's quoted schema name, for the compiler.
func (d *DynamicRead) Schema(ctx context.Context) (string, error) {
	tenant, ok := tenancy.FromContext(ctx)
	if !ok {
		return "", d.unbound()
	}
	return pgx.Identifier{SchemaName(d.c.prefix, tenant)}.Sanitize(), nil
}

// Query runs text in a read-only transaction the route starts, under the
// tenant's role when configured and within the route's timeout, hands the
// rows to scan, and rolls back: nothing the text does is committed. The
// connection is then reset (DISCARD ALL) before it is reused, or closed,
// so no setting, lock, listener, cursor or prepared statement outlives
// the call; and it is reused for the same tenant only (see tenantPool),
// so what DISCARD ALL leaves never reaches another. Text that made the
// transaction write (a large object, say) is refused with
// postgres_dynamic_read_wrote, its write rolled back. Behind a transaction
// pooler the reset is pooledReset, sent with the rollback. Inside a unit
// of work (InTx) it is refused (postgres_unit_of_work_refused).
func (d *DynamicRead) Query(ctx context.Context, text string, args []any, scan func(pgx.Rows) error) error {
	if err := outsideUnit(ctx, d.route, "a dynamic read runs its compiled text in a read-only transaction of its own"); err != nil {
		return d.refuse(ctx, err)
	}
	// One call from its entry until the connection is handed back. As on
	// every route, what fails before the text runs is the span's to
	// record, and so are the read's own refusals after it; the compiled
	// text's errors are the driver instrumentation's.
	ctx, tenant, t, held, err := d.entry.Open(ctx)
	if err != nil {
		return err
	}
	wrote, err := d.run(ctx, t.conn, tenant, text, args, scan)
	t.put(d.scrub(ctx, t.conn))
	if err == nil && wrote {
		err = &tenancy.Error{Code: CodeDynamicReadWrote, Module: d.c.module, Backend: rules.Name, Route: d.spec.name,
			Detail: "the compiled text wrote inside its read-only transaction (a large object, for instance); the write was rolled back",
			Fix:    "compile read-only SQL: no lo_* functions or other writing calls"}
	}
	recorded := err
	if _, coded := errors.AsType[*tenancy.Error](err); !coded {
		recorded = nil
	}
	held.End(recorded)
	return err
}

// acquire is the entry's step: a connection that serves tenant only, from
// the route's own pool on a plain client, else from the tenant's own
// login or routed pool, whose every connection is the tenant's. The
// caller hands it back (put) before the entry's end.
func (d *DynamicRead) acquire(ctx context.Context, tenant tenancy.ID) (dynConn, func(), error) {
	conn, put, err := d.acquireEntered(ctx, tenant)
	if err != nil {
		return dynConn{}, nil, err
	}
	return dynConn{conn: conn, put: put}, nil, nil
}

func (d *DynamicRead) acquireEntered(ctx context.Context, tenant tenancy.ID) (*pgx.Conn, func(reuse bool), error) {
	if d.logins == nil && d.own != nil {
		tc, err := d.own.acquire(ctx, tenant)
		if err != nil {
			return nil, nil, err
		}
		return tc.conn, func(reuse bool) { d.own.release(ctx, tc, reuse) }, nil
	}
	open := d.c.conn
	if d.logins != nil {
		open = d.logins.AcquireFor
	}
	pc, release, err := fromPool(ctx, tenant, open, func(p *pgxpool.Pool) (*pgxpool.Conn, error) { return p.Acquire(ctx) })
	if err != nil {
		return nil, nil, err
	}
	return pc.Conn(), func(reuse bool) {
		if !reuse {
			closeConn(ctx, pc.Conn()) // the pool then destroys it and frees its slot
		}
		pc.Release()
		release()
	}, nil
}

// closeConn closes a connection, bounded even when the caller's context
// is done.
func closeConn(ctx context.Context, conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scrubTimeout)
	defer cancel()
	_ = conn.Close(ctx)
}

// run executes one read inside its transaction and reports whether the
// transaction wrote. The transaction is left open for scrub to roll back
// when anything fails.
func (d *DynamicRead) run(ctx context.Context, conn *pgx.Conn, tenant tenancy.ID, text string, args []any, scan func(pgx.Rows) error) (bool, error) {
	// One round trip: the SELECT takes the snapshot, so the compiled text
	// can no longer switch the transaction to read write.
	begin := "BEGIN READ ONLY; SET LOCAL statement_timeout = " + strconv.FormatInt(d.cfg.Timeout.Milliseconds(), 10)
	if d.cfg.TenantRole {
		begin += "; SET LOCAL ROLE " + pgx.Identifier{RoleName(d.c.prefix, tenant)}.Sanitize()
	}
	// Behind a transaction pooler the login is the pooler's: a Login read
	// checks that its server session is the tenant role's own.
	checkLogin := d.c.pooled && d.logins != nil
	if checkLogin {
		begin += "; SELECT session_user"
	} else {
		begin += "; SELECT"
	}
	res, err := conn.PgConn().Exec(ctx, begin).ReadAll()
	if err != nil {
		return false, err
	}
	if checkLogin {
		last := res[len(res)-1]
		if len(last.Rows) != 1 || len(last.Rows[0]) != 1 {
			return false, errUnexpectedReply
		}
		if user, role := string(last.Rows[0][0]), RoleName(d.c.prefix, tenant); user != role {
			return false, d.pooledLoginError(user, role)
		}
	}
	rows, err := conn.Query(ctx, text, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if err := scan(rows); err != nil {
		return false, err
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	// A transaction that wrote has an xid; read-only mode does not stop
	// every write (lo_from_bytea, for one), the rollback undoes them all.
	end := "SELECT pg_catalog.txid_current_if_assigned() IS NOT NULL; ROLLBACK"
	if d.c.pooled {
		end += "; " + pooledReset
	}
	res, err = conn.PgConn().Exec(ctx, end).ReadAll()
	if err != nil {
		return false, err
	}
	if len(res) < 2 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 1 {
		return false, errUnexpectedReply
	}
	return string(res[0].Rows[0][0]) != "f", nil
}

// scrub rolls back what run left open and resets the session (DISCARD
// ALL: settings, role, advisory locks, listeners, cursors, prepared
// statements, temporary objects), all before Query returns, and reports
// whether conn may be reused. On a routed pool, whose connections the
// module's statements share, pgx's statement caches are cleared too
// (DISCARD ALL dropped the statements they name). A connection that cannot
// be reset is not reused. Resetting costs well under a millisecond here;
// closing and reconnecting some five. Behind a transaction pooler the
// reset is pooledReset instead, in the message that ends the transaction.
func (d *DynamicRead) scrub(ctx context.Context, conn *pgx.Conn) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scrubTimeout)
	defer cancel()
	pc := conn.PgConn()
	if pc.IsClosed() {
		return false
	}
	var err error
	if d.c.pooled {
		// The session is the read's only while its transaction is open:
		// the reset goes in the message that ends it (run's, or this one).
		if pc.TxStatus() != 'I' {
			_, err = pc.Exec(ctx, "ROLLBACK; "+pooledReset).ReadAll()
		}
		return err == nil
	}
	if pc.TxStatus() != 'I' {
		_, err = pc.Exec(ctx, "ROLLBACK").ReadAll()
	}
	if err == nil {
		_, err = pc.Exec(ctx, "DISCARD ALL").ReadAll()
	}
	if err == nil && d.own == nil {
		err = conn.DeallocateAll(ctx)
	}
	return err == nil
}

// pooledReset follows a dynamic read's ROLLBACK in the same message
// behind a transaction pooler, while the server session is still the
// read's (DISCARD ALL cannot: it refuses to run in the implicit
// transaction of a message of several statements). Settings, the role,
// listeners, cursors and temporary objects do not outlive the rollback;
// session advisory locks do, and they conflict database-wide, with every
// tenant's and the framework's keys. What else outlives it (a prepared
// statement the text made, setseed, a custom setting's name) stays in a
// server session of the tenant's own login or database, which is why a
// plain client without Login is refused behind a pooler.
const pooledReset = "SELECT pg_catalog.pg_advisory_unlock_all()"

var errUnexpectedReply = errors.New("postgres: dynamic read: unexpected reply to the closing statement")
