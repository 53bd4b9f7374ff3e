package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// querier is what a call's statements run on: the tenant's pool, or the
// unit of work its context carries. A *pgxpool.Pool converts to it
// without allocating, so the call outside a unit costs what it did.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// unitKey is the context key of the unit of work a call runs in.
type unitKey struct{}

// unitOf returns the unit of work ctx carries, ended or not.
func unitOf(ctx context.Context) *unit {
	u, _ := ctx.Value(unitKey{}).(*unit)
	return u
}

// unitEndTimeout bounds the rollback that ends a failed unit, which runs
// even when the caller's context is done.
const unitEndTimeout = 5 * time.Second

// InTx runs fn in one transaction of the client (a unit of work) and
// commits it when fn returns nil, rolling it back otherwise. A panic in fn
// rolls it back and propagates. The transaction runs on the bound tenant's
// pool (the tenant's own on a routed client); with no tenant bound InTx
// fails with tenant_unbound, for a suspended tenant with tenant_suspended.
//
// Every route of this client called with fn's context, or one derived
// from it, runs on the transaction and sees its writes: documents,
// counters, searches, analytics, inbox, idempotency store and outbox
// (Write). The version gate still applies to each call. The transaction's
// tenant is fixed: a call under another tenant is refused with
// tenant_scope_changed, an unbound one with tenant_unbound.
//
// What does not join is refused, never run beside the transaction: a
// route or InTx of another client (postgres_unit_of_work_refused; pass
// a context from outside fn to run it apart), a dynamic read (its compiled
// text keeps its own read-only transaction), an outbox Claim, and any call
// made with fn's context after InTx returned (postgres_unit_of_work_ended).
//
// A nested InTx of this client joins the unit. A transaction opened
// inside the unit (a nested InTx, Outbox.Write, Idempotency.Do,
// Inbox.Once) that would have rolled back marks the whole unit to roll
// back: InTx then rolls back and returns postgres_unit_of_work_rolled_back
// even when fn returns nil, so the unit never commits part of its work.
//
// Calls from goroutines started in fn run one statement at a time (the
// transaction is one connection); wait for them before fn returns. Writes
// to other backends (Redis, Kafka) inside fn are not part of the unit:
// write an outbox message instead.
//
// With a TracerProvider the unit is one span (telemetry.UnitSpan) with
// its outcome, and the route calls inside it are its children.
func (c *Client) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if u := unitOf(ctx); u != nil {
		return u.nest(ctx, c, fn)
	}
	if c.units == nil {
		_, err := c.runUnit(ctx, fn)
		return err
	}
	return c.tracedUnit(ctx, fn)
}

// tracedUnit is InTx as one span (telemetry.UnitSpan), whose context fn
// gets, so the route calls inside are its children.
func (c *Client) tracedUnit(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	tenant, _ := tenancy.FromContext(ctx)
	ctx, span := c.units.Start(ctx, tenant)
	outcome := ""
	defer func() {
		if outcome == "" { // fn panicked or ended its goroutine: runUnit rolled back
			span.End(telemetry.OutcomeRollback, errUnitPanicked)
			return
		}
		span.End(outcome, err)
	}()
	outcome, err = c.runUnit(ctx, fn)
	return err
}

var errUnitPanicked = errors.New("postgres: the unit of work's function panicked")

// runUnit runs fn in a new unit of work and reports how it ended (one of
// telemetry's unit outcomes).
func (c *Client) runUnit(ctx context.Context, fn func(ctx context.Context) error) (string, error) {
	// The unit's entry: it needs a tenant, and is in flight until it has
	// committed or rolled back, so an Offboard waits for it before any
	// teardown. Its span is the unit's own (tracedUnit), with its outcome.
	_, tenant, tx, done, err := c.unitEntry.Enter(ctx)
	if err != nil {
		return telemetry.OutcomeError, err
	}
	defer done()
	u := &unit{c: c, tenant: tenant, tx: tx}
	u.run = &unitTx{u: u}
	returned := false
	defer func() {
		if !returned { // fn panicked or ended its goroutine
			_ = u.end(ctx, false)
		}
	}()
	err = fn(context.WithValue(ctx, unitKey{}, u))
	returned = true
	if err != nil {
		_ = u.end(ctx, false) // a failed rollback closes the connection, which rolls back too
		return telemetry.OutcomeRollback, err
	}
	switch err := u.end(ctx, true); {
	case err == nil:
		return telemetry.OutcomeCommit, nil
	case errors.Is(err, CodeUnitOfWorkRolledBack):
		return telemetry.OutcomeRollback, err
	default:
		return telemetry.OutcomeError, err
	}
}

// newUnitEntry is the entry of the client's units of work: every unit needs
// a tenant (whatever its routes' decisions), reaches a transaction on the
// tenant's pool and has no version gate of its own (each route call inside
// it runs its route's).
func (c *Client) newUnitEntry() *modules.Entry[pgx.Tx] {
	g := modules.GateOf(modules.GateSpec{Rules: rules, Module: c.module, Decision: floors.Decision{NeedsTenant: true}, Suspensions: c.suspensions})
	return modules.NewEntry(g, func(ctx context.Context, tenant tenancy.ID) (pgx.Tx, func(), error) {
		open, shared := c.conn, c.routed == nil
		if l := c.sqlLogins.Load(); l != nil {
			// A SQL route's text joins the unit: it runs on the tenant's
			// login, as its role, and so do the module's own routes.
			open, shared = l.AcquireFor, false
		}
		tx, release, err := beginTx(ctx, tenant, open)
		if err != nil || shared { // the shared pool's release does nothing: no closure
			return tx, nil, err
		}
		return tx, release, nil
	}, nil)
}

// unit is one unit of work: a transaction on one client's connection, for
// one tenant.
type unit struct {
	c      *Client
	tenant tenancy.ID
	tx     pgx.Tx
	run    *unitTx // what the routes' statements run on

	// mu runs one statement at a time on tx and orders every statement
	// before the end: none runs once ended is set.
	mu    sync.Mutex
	ended atomic.Bool
	// state guards what follows and the setting of ended, apart from mu:
	// marking the unit never waits for a statement.
	state    sync.Mutex
	failed   error    // set: the unit rolls back (rollback-only), and why
	onCommit []func() // run once the commit succeeded
}

// end commits (commit and not marked to roll back) or rolls the unit back.
func (u *unit) end(ctx context.Context, commit bool) error {
	u.mu.Lock()
	u.state.Lock()
	if u.ended.Load() {
		u.state.Unlock()
		u.mu.Unlock()
		return nil
	}
	u.ended.Store(true)
	failed, hooks := u.failed, u.onCommit
	u.state.Unlock()
	var err error
	if commit && failed == nil {
		err = u.tx.Commit(ctx)
	} else {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unitEndTimeout)
		err = u.tx.Rollback(rctx)
		cancel()
	}
	u.mu.Unlock()
	switch {
	case !commit:
		return err
	case failed != nil:
		return fmt.Errorf("%w: %w", u.rolledBack(failed), failed)
	case err != nil:
		return err
	}
	for _, h := range hooks {
		h()
	}
	return nil
}

// nest runs fn of a nested InTx on client c inside u.
func (u *unit) nest(ctx context.Context, c *Client, fn func(ctx context.Context) error) (err error) {
	if err := u.admit(ctx, c, ""); err != nil {
		return err
	}
	returned := false
	defer func() {
		if !returned {
			u.fail(errors.New("a nested InTx panicked"))
		}
	}()
	err = fn(ctx)
	returned = true
	if err != nil {
		u.fail(err)
	}
	return err
}

// fail marks u to roll back, keeping the first cause.
func (u *unit) fail(cause error) {
	u.state.Lock()
	defer u.state.Unlock()
	if u.failed == nil {
		u.failed = cause
	}
}

// afterCommit runs fn once the unit ctx carries on c commits, or now when
// there is none (or it has ended): a cache of what the database holds is
// corrected only once the change is visible to every connection.
func (c *Client) afterCommit(ctx context.Context, fn func()) {
	if u := unitOf(ctx); u != nil && u.c == c {
		u.state.Lock()
		if !u.ended.Load() {
			u.onCommit = append(u.onCommit, fn)
			u.state.Unlock()
			return
		}
		u.state.Unlock()
	}
	fn()
}

// join admits a call of route r inside u, whose statements then run on
// the unit's transaction (the version gate follows, in the call's entry).
func (u *unit) join(ctx context.Context, r route) error {
	return u.admit(ctx, r.c, r.spec.name)
}

// versionQuerier runs the version gate's reads inside a unit, each in a
// savepoint under the statement lock: a missing history table or schema,
// which the gate reads as version 0 or never provisioned, would otherwise
// abort the unit's transaction and turn the gate's answer into 25P02. The
// gate reads only while a tenant is not yet known current, so a call
// usually pays nothing for it.
type versionQuerier struct{ *unitTx }

func (q versionQuerier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return savepointRow{t: q.unitTx, ctx: ctx, sql: sql, args: args}
}

type savepointRow struct {
	t    *unitTx
	ctx  context.Context
	sql  string
	args []any
}

func (r savepointRow) Scan(dest ...any) error {
	if err := r.t.lock(); err != nil {
		return err
	}
	defer r.t.unlock()
	tx := r.t.u.tx
	if _, err := tx.Exec(r.ctx, "SAVEPOINT tenantwire_version"); err != nil {
		return err
	}
	err := tx.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
	end := "RELEASE SAVEPOINT tenantwire_version"
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		end = "ROLLBACK TO SAVEPOINT tenantwire_version; " + end
	}
	if _, eerr := tx.Exec(r.ctx, end); eerr != nil && err == nil {
		err = eerr
	}
	return err
}

// admit refuses a call inside u that cannot join it: after the unit
// ended, on another client, or under another tenant (or none).
func (u *unit) admit(ctx context.Context, c *Client, route string) error {
	if u.ended.Load() {
		return u.endedErr(c.module, route)
	}
	if c != u.c {
		return &tenancy.Error{Code: CodeUnitOfWorkRefused, Module: c.module, Backend: rules.Name, Route: route,
			Detail: "the call's context carries a unit of work of module " + u.c.module + ": a transaction on that module's connection, which this module's calls cannot join",
			Fix:    "make the call with a context from outside the unit's function to run it apart from the unit, or put the routes that must commit together in one module"}
	}
	id, ok := tenancy.FromContext(ctx)
	if !ok {
		return rules.Unbound(c.module, route)
	}
	if id != u.tenant {
		return &tenancy.Error{Code: tenancy.CodeTenantScopeChanged, Module: c.module, Backend: rules.Name, Route: route,
			Detail: fmt.Sprintf("a call inside a unit of work of tenant %s ran under tenant %s", u.tenant, id),
			Fix:    "pass the unit's own context to every call inside it; start a separate unit of work for another tenant"}
	}
	return nil
}

func (u *unit) endedErr(module, route string) error {
	return &tenancy.Error{Code: CodeUnitOfWorkEnded, Module: module, Backend: rules.Name, Route: route,
		Detail: "the call's context carries a unit of work of module " + u.c.module + " that has already committed or rolled back; nothing ran",
		Fix:    "make every call of a unit inside its function and wait for goroutines started there before it returns; use a context from outside the unit for later work"}
}

func (u *unit) rolledBack(cause error) error {
	return &tenancy.Error{Code: CodeUnitOfWorkRolledBack, Module: u.c.module, Backend: rules.Name,
		Detail: "a transaction inside the unit failed and the unit's function returned nil; the unit rolled back rather than commit part of its work: " + cause.Error(),
		Fix:    "return the error of a nested InTx, Outbox.Write, Idempotency.Do or Inbox.Once from the unit's function, or handle it before the unit writes anything that depends on it"}
}

// outsideUnit refuses a call of r that must not join a unit of work when
// ctx carries one; what says why.
func outsideUnit(ctx context.Context, r route, what string) error {
	u := unitOf(ctx)
	if u == nil {
		return nil
	}
	if u.ended.Load() {
		return u.endedErr(r.c.module, r.spec.name)
	}
	return &tenancy.Error{Code: CodeUnitOfWorkRefused, Module: r.c.module, Backend: rules.Name, Route: r.spec.name,
		Detail: what + ", so it cannot join the unit of work of module " + u.c.module + " its context carries",
		Fix:    "make the call with a context from outside the unit's function, before or after the unit"}
}

// unitTx is a unit's transaction as routes and callbacks see it: one
// statement at a time, none once the unit ended. A joined view (from
// Begin: a transaction a route opens inside the unit) commits nothing,
// and its Rollback marks the whole unit to roll back.
type unitTx struct {
	u      *unit
	joined bool
	closed atomic.Bool // a joined view's Commit or Rollback ran
}

var _ pgx.Tx = (*unitTx)(nil)

var errUnitCommits = errors.New("postgres: a unit of work commits or rolls back when its function returns")

// lock takes the unit's statement lock; the caller unlocks.
func (t *unitTx) lock() error {
	if t.joined && t.closed.Load() {
		return pgx.ErrTxClosed
	}
	t.u.mu.Lock()
	if t.u.ended.Load() {
		t.u.mu.Unlock()
		return t.u.endedErr(t.u.c.module, "")
	}
	return nil
}

func (t *unitTx) unlock() { t.u.mu.Unlock() }

func (t *unitTx) Begin(context.Context) (pgx.Tx, error) {
	if err := t.lock(); err != nil {
		return nil, err
	}
	t.unlock()
	return &unitTx{u: t.u, joined: true}, nil
}

func (t *unitTx) Commit(context.Context) error {
	if !t.joined {
		return errUnitCommits
	}
	if t.closed.Swap(true) {
		return pgx.ErrTxClosed
	}
	if t.u.ended.Load() {
		return t.u.endedErr(t.u.c.module, "")
	}
	return nil
}

func (t *unitTx) Rollback(context.Context) error {
	if !t.joined {
		return errUnitCommits
	}
	if t.closed.Swap(true) {
		return pgx.ErrTxClosed
	}
	t.u.fail(errors.New("a transaction opened inside the unit rolled back"))
	return nil
}

func (t *unitTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.lock(); err != nil {
		return pgconn.CommandTag{}, err
	}
	defer t.unlock()
	return t.u.tx.Exec(ctx, sql, args...)
}

func (t *unitTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.lock(); err != nil {
		return nil, err
	}
	rows, err := t.u.tx.Query(ctx, sql, args...)
	if err != nil {
		t.unlock()
		return nil, err
	}
	return &unitRows{Rows: rows, t: t}, nil
}

func (t *unitTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.lock(); err != nil {
		return errRow{err}
	}
	return &unitRow{row: t.u.tx.QueryRow(ctx, sql, args...), t: t}
}

func (t *unitTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.lock(); err != nil {
		return errBatch{err}
	}
	return &unitBatch{BatchResults: t.u.tx.SendBatch(ctx, b), t: t}
}

func (t *unitTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.lock(); err != nil {
		return 0, err
	}
	defer t.unlock()
	return t.u.tx.CopyFrom(ctx, table, cols, src)
}

func (t *unitTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.lock(); err != nil {
		return nil, err
	}
	defer t.unlock()
	return t.u.tx.Prepare(ctx, name, sql)
}

// LargeObjects and Conn reach the connection without the statement lock.
func (t *unitTx) LargeObjects() pgx.LargeObjects { return t.u.tx.LargeObjects() }
func (t *unitTx) Conn() *pgx.Conn                { return t.u.tx.Conn() }

// unitRows holds the statement lock until the rows are read or closed.
type unitRows struct {
	pgx.Rows
	t    *unitTx
	done bool
}

func (r *unitRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *unitRows) Close() {
	r.Rows.Close()
	if !r.done {
		r.done = true
		r.t.unlock()
	}
}

// unitRow holds the statement lock until it is scanned.
type unitRow struct {
	row  pgx.Row
	t    *unitTx
	done bool
}

func (r *unitRow) Scan(dest ...any) error {
	if r.done {
		return pgx.ErrTxClosed
	}
	r.done = true
	defer r.t.unlock()
	return r.row.Scan(dest...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// unitBatch holds the statement lock until the batch is closed.
type unitBatch struct {
	pgx.BatchResults
	t    *unitTx
	done bool
}

func (b *unitBatch) Close() error {
	err := b.BatchResults.Close()
	if !b.done {
		b.done = true
		b.t.unlock()
	}
	return err
}

type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }
