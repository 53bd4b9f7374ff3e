package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// InboxConfig wires an inbox: the event ids a consumer has handled, so a
// redelivered message is handled once. Tenant-global by default (one id
// space); TenantAware keeps each tenant's ids apart (tagged), which an inbox
// of outbox events needs, outbox event ids being unique per tenant only,
// and lets a per-tenant Table resolve per tenant (namespace). Without
// TenantAware the resolver gets no tenant (the inbox rule of postgres.Rules).
type InboxConfig struct {
	TenantAware bool
	Table       naming.Name
}

// InboxRoute adds an inbox route and provides *Inbox under its name.
func InboxRoute(name string, ic InboxConfig) Option {
	return modules.Own(func(c *config) {
		addTableRoute(c, name, kindInbox, ic.TenantAware, ic.Table, "name the inbox table",
			"event_id text NOT NULL, seen_at timestamptz NOT NULL DEFAULT pg_catalog.now(), ", "event_id",
			func(r route) *Inbox { return &Inbox{route: r, cfg: ic} })
	})
}

// Inbox deduplicates consumed messages by event id.
type Inbox struct {
	route
	cfg    InboxConfig
	static *inboxStmts
}

type inboxStmts struct {
	sql
	mark, seen, forget, count, sweep string
}

func (i *Inbox) initStatic() { i.static = staticSet(i.route, i.build) }

func (i *Inbox) build(tenant tenancy.ID) *inboxStmts {
	s := sql{tagged: i.spec.decision.Tagged}
	t := i.qualified(i.cfg.Table, tenant)
	return &inboxStmts{sql: s,
		mark:   "INSERT INTO " + t + " (" + s.col() + "event_id) VALUES (" + s.val() + s.p(1) + ") ON CONFLICT DO NOTHING",
		seen:   "SELECT EXISTS (SELECT 1 FROM " + t + " WHERE " + s.where() + "event_id = " + s.p(1) + ")",
		forget: "DELETE FROM " + t + " WHERE " + s.where() + "event_id = " + s.p(1),
		count:  "SELECT pg_catalog.count(*) FROM " + t + " WHERE " + s.where() + "TRUE",
		sweep:  "DELETE FROM " + t + " WHERE " + s.where() + "seen_at < pg_catalog.now() - " + s.p(1) + " * '1 millisecond'::pg_catalog.interval",
	}
}

func (i *Inbox) begin(ctx context.Context) (context.Context, tenancy.ID, *inboxStmts, querier, func(), error) {
	return beginCall(ctx, i.route, i.static, i.build)
}

// Once runs fn in one transaction with marking eventID, unless it was
// marked before: it reports whether fn ran. A concurrent duplicate waits
// for the first to commit, then skips; when fn fails nothing is marked.
func (i *Inbox) Once(ctx context.Context, eventID string, fn func(ctx context.Context, tx pgx.Tx) error) (bool, error) {
	ctx, tenant, st, pool, release, err := i.begin(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	ran := false
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, st.mark, st.mode(args(st.tagged, tenant, eventID))...)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		ran = true
		return fn(ctx, tx)
	})
	return ran && err == nil, err
}

// Mark records eventID and reports whether it was new.
func (i *Inbox) Mark(ctx context.Context, eventID string) (_ bool, err error) {
	defer i.notProvisioned(&err)
	n, err := execRows(ctx, i.route, i.static, i.build, func(st *inboxStmts) string { return st.mark }, eventID)
	return err == nil && n == 1, err
}

// Seen reports whether eventID was marked.
func (i *Inbox) Seen(ctx context.Context, eventID string) (_ bool, err error) {
	defer i.notProvisioned(&err)
	return queryOne[bool](ctx, i.route, i.static, i.build, func(st *inboxStmts) string { return st.seen }, eventID)
}

// Forget removes eventID's mark, so the message is handled again if it
// comes back; ErrNotMarked when there was none.
func (i *Inbox) Forget(ctx context.Context, eventID string) (err error) {
	defer i.notProvisioned(&err)
	ctx, tenant, st, pool, release, err := i.begin(ctx)
	if err != nil {
		return err
	}
	defer release()
	return execOne(ctx, pool, st.forget, st.mode(args(st.tagged, tenant, eventID)), ErrNotMarked)
}

// Count returns how many event ids are marked (the bound tenant's when the
// inbox is tenant-scoped).
func (i *Inbox) Count(ctx context.Context) (_ int, err error) {
	defer i.notProvisioned(&err)
	return queryOne[int](ctx, i.route, i.static, i.build, func(st *inboxStmts) string { return st.count })
}

// ErrNotMarked is returned by Forget for an event id with no mark.
var ErrNotMarked = errors.New("postgres inbox: event id not marked")

// sweep deletes marks older than retain.
func (i *Inbox) sweep(ctx context.Context, retain time.Duration) (int64, error) {
	return execRows(ctx, i.route, i.static, i.build, func(st *inboxStmts) string { return st.sweep }, retain.Milliseconds())
}
