package postgres

import (
	"context"
	"errors"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/floors"
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
	return func(c *config) {
		addTableRoute(c, name, kindInbox, ic.TenantAware, ic.Table, "inbox",
			"event_id text NOT NULL, seen_at timestamptz NOT NULL DEFAULT pg_catalog.now(), ", "event_id",
			func(r route, shared bool) *Inbox {
				i := &Inbox{route: r, cfg: ic}
				if shared {
					i.static = i.build(tenancy.ID{})
				}
				return i
			})
	}
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
	ctx, tenant, st, pool, release, err := i.begin(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	tag, err := pool.Exec(ctx, st.mark, st.mode(args(st.tagged, tenant, eventID))...)
	return err == nil && tag.RowsAffected() == 1, err
}

// Seen reports whether eventID was marked.
func (i *Inbox) Seen(ctx context.Context, eventID string) (_ bool, err error) {
	defer i.notProvisioned(&err)
	ctx, tenant, st, pool, release, err := i.begin(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	var seen bool
	err = pool.QueryRow(ctx, st.seen, st.mode(args(st.tagged, tenant, eventID))...).Scan(&seen)
	return seen, err
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
	ctx, tenant, st, pool, release, err := i.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	var n int
	err = pool.QueryRow(ctx, st.count, st.mode(args(st.tagged, tenant))...).Scan(&n)
	return n, err
}

// ErrNotMarked is returned by Forget for an event id with no mark.
var ErrNotMarked = errors.New("postgres inbox: event id not marked")

// sweep deletes marks older than retain.
func (i *Inbox) sweep(ctx context.Context, retain time.Duration) (int64, error) {
	ctx, tenant, st, pool, release, err := i.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	tag, err := pool.Exec(ctx, st.sweep, st.mode(args(st.tagged, tenant, retain.Milliseconds()))...)
	return tag.RowsAffected(), err
}

// addTableRoute adds a route over one table whose per-tenant resolver is
// passed the tenant only when the route is tenant-aware (inbox,
// idempotency store). newRoute builds the route object; shared says one set
// of statements serves every tenant (any shape but a tenant-aware route
// over per-tenant tables).
func addTableRoute[R any](c *config, name string, kind floors.Kind, aware bool, table naming.Name, what, columns, key string,
	newRoute func(r route, shared bool) R) {
	spec := &routeSpec{name: name, kind: kind, tenantAware: aware, typ: reflect.TypeFor[R](),
		rels: []roleRel{{"table", table}}}
	if err := validName(table.Base(), maxIdent); err != nil {
		c.errs = append(c.errs, rules.WiringInvalid(c.name, name, err.Error(), "name the "+what+" table"))
	}
	spec.ddl = func(cl *Client, tenant tenancy.ID) []string {
		s := sql{tagged: spec.decision.Tagged}
		return []string{"CREATE TABLE IF NOT EXISTS " + route{cl, spec}.qualified(table, tenant) + " (" + s.tenantColumn() + columns + s.key(key) + ")"}
	}
	build := func(cl *Client) R { r := route{cl, spec}; return newRoute(r, !r.perTenant()) }
	spec.provide = provideRoute(build)
	spec.object = func(cl *Client) any { return build(cl) }
	c.routes = append(c.routes, spec)
}
