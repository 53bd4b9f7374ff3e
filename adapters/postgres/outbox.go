package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
)

// OutboxConfig wires an outbox route. Rows always carry their tenant; the
// route is tenant-global by default (one table, any relay may drain it).
// TenantAware makes it tagged; a per-tenant Table is then resolved per
// tenant (namespace). Without TenantAware the resolver gets no tenant
// (the outbox rule of postgres.Rules), so a per-tenant Table names one shared schema, that of the
// zero tenant.
type OutboxConfig struct {
	TenantAware bool
	Table       naming.Name
}

// OutboxRoute adds an outbox route and provides *Outbox under its name.
func OutboxRoute(name string, oc OutboxConfig) Option {
	return modules.Own(func(c *config) {
		oc := oc // the option may be applied more than once (Placements)
		oc.Table = c.inShared(oc.Table)
		// The pending index is named after the table: leave room for it.
		spec := tableSpec[*Outbox](c, name, kindOutbox, oc.TenantAware, oc.Table, "_pending", "name the outbox table")
		spec.ddl = func(cl *Client, tenant tenancy.ID) []string {
			t := route{cl, spec}.qualified(oc.Table, tenant)
			return []string{
				"CREATE TABLE IF NOT EXISTS " + t + " (id bigserial PRIMARY KEY, tenant_id uuid NOT NULL, " +
					"event_id text NOT NULL, topic text NOT NULL, key bytea, payload bytea, headers jsonb, " +
					"created_at timestamptz NOT NULL DEFAULT pg_catalog.now(), delivered_at timestamptz, UNIQUE (tenant_id, event_id))",
				"CREATE INDEX IF NOT EXISTS " + pgx.Identifier{oc.Table.Base() + "_pending"}.Sanitize() + " ON " + t + " (tenant_id, id) WHERE delivered_at IS NULL",
				scopeEventIDs(t),
			}
		}
		spec.provide = provideRoute(func(cl *Client) *Outbox { return newOutbox(cl, spec, oc) })
		spec.object = func(cl *Client) any { return newOutbox(cl, spec, oc) }
		spec.placedProvide = placedProvider(func(p *modules.PlacedRoute[*Outbox]) *Outbox { return &Outbox{placed: p} })
		c.routes = append(c.routes, spec)
	})
}

// scopeEventIDs upgrades an outbox table created when event ids were unique
// across tenants: it drops the UNIQUE (event_id) constraint, which let one
// tenant learn of or block another's event id, and adds UNIQUE (tenant_id,
// event_id) when missing. On a current table it only reads the catalog.
// t is a quoted identifier of [a-z0-9_] names: safe inside the literal.
func scopeEventIDs(t string) string {
	lit := "'" + strings.ReplaceAll(t, "'", "''") + "'"
	return "DO $$ DECLARE rel pg_catalog.regclass := " + lit + "; ev pg_catalog.int2; tn pg_catalog.int2; c pg_catalog.name; BEGIN " +
		"SELECT attnum INTO ev FROM pg_catalog.pg_attribute WHERE attrelid = rel AND attname = 'event_id'; " +
		"SELECT attnum INTO tn FROM pg_catalog.pg_attribute WHERE attrelid = rel AND attname = 'tenant_id'; " +
		"FOR c IN SELECT conname FROM pg_catalog.pg_constraint WHERE conrelid = rel AND contype = 'u' AND conkey = ARRAY[ev] LOOP " +
		"EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', " + lit + ", c); END LOOP; " +
		"IF NOT EXISTS (SELECT FROM pg_catalog.pg_constraint WHERE conrelid = rel AND contype = 'u' AND conkey @> ARRAY[tn, ev] AND conkey <@ ARRAY[tn, ev]) THEN " +
		"EXECUTE pg_catalog.format('ALTER TABLE %s ADD UNIQUE (tenant_id, event_id)', " + lit + "); END IF; END $$"
}

// Outbox is an outbox: Write adds rows (in the caller's transaction
// with WriteTx), and it is the outbox.Source its relay drains.
type Outbox struct {
	route
	cfg    OutboxConfig
	static *outboxStmts
	// cursor: where the next tenant-global claim starts (outbox_fair.go).
	cursor fairCursor
	// placed: see Documents.placed. The module's relays and sweeps drain
	// each placement's outbox with the workers of that placement.
	placed *modules.PlacedRoute[*Outbox]
}

type outboxStmts struct {
	sql
	table                                             string
	insert, claimTenant, complete, sweep, sweepTenant string
	// fairPick and fairLock are the tenant-global claim (outbox_fair.go).
	fairPick, fairLock string
}

func newOutbox(cl *Client, spec *routeSpec, oc OutboxConfig) *Outbox {
	o := &Outbox{route: route{cl, spec}, cfg: oc}
	o.static = staticSet(o.route, o.build)
	return o
}

func (o *Outbox) build(tenant tenancy.ID) *outboxStmts {
	t := o.qualified(o.cfg.Table, tenant)
	sel := "SELECT id, tenant_id, event_id, topic, key, payload, headers FROM " + t + " WHERE delivered_at IS NULL"
	lock := " ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"
	old := "delivered_at < pg_catalog.now() - $1 * '1 millisecond'::pg_catalog.interval"
	return &outboxStmts{table: t,
		insert:      "INSERT INTO " + t + " (tenant_id, event_id, topic, key, payload, headers) VALUES ($1, $2, $3, $4, $5, $6)",
		claimTenant: sel + " AND tenant_id = $2" + lock,
		// Tenant-global: every tenant in turn, the relay's parked tenants
		// left out of the batch.
		fairPick: fairClaimSQL(t),
		fairLock: fairLockSQL(t),
		// By row id: an event id names a row only together with its tenant.
		complete:    "UPDATE " + t + " SET delivered_at = pg_catalog.now() WHERE id = ANY($1::bigint[]) AND delivered_at IS NULL",
		sweep:       "DELETE FROM " + t + " WHERE " + old,
		sweepTenant: "DELETE FROM " + t + " WHERE " + old + " AND tenant_id = $2",
	}
}

// rowTenant is the tenant rows written under ctx carry: the bound one, or
// the zero ID under the explicit tenant-global scope of a tenant-global
// outbox. Anything else fails closed.
func (o *Outbox) rowTenant(ctx context.Context) (tenancy.ID, error) {
	if id, ok := tenancy.FromContext(ctx); ok {
		return id, nil
	}
	if !o.spec.decision.NeedsTenant && tenancy.IsGlobal(ctx) {
		return tenancy.ID{}, nil
	}
	return tenancy.ID{}, o.refuse(ctx, o.unbound())
}

// Write adds msgs in a transaction of its own (inside a unit of work, in
// the unit's). Each row carries the trace context of the write's own span,
// for the relay's delivery to link to.
func (o *Outbox) Write(ctx context.Context, msgs ...outbox.Message) error {
	if o.placed != nil {
		in, end, err := o.placed.Pick(ctx, true)
		if err != nil {
			return err
		}
		defer end()
		return in.Write(ctx, msgs...)
	}
	tenant, err := o.rowTenant(ctx)
	if err != nil {
		return err
	}
	ctx, pool, release, err := o.connect(ctx, tenant)
	if err != nil {
		return err
	}
	defer release()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return o.WriteTx(ctx, tx, msgs...) })
}

// WriteTx adds msgs inside tx, so they commit or roll back with the
// caller's business writes. tx must be on the bound tenant's pool
// (Client.Pool) when the module is routed. Each row carries the tenant
// bound to ctx, and the trace context ctx carries; a message naming
// another tenant is refused. An empty EventID gets a random one.
func (o *Outbox) WriteTx(ctx context.Context, tx pgx.Tx, msgs ...outbox.Message) error {
	if o.placed != nil {
		in, end, err := o.placed.Pick(ctx, true)
		if err != nil {
			return err
		}
		defer end()
		return in.WriteTx(ctx, tx, msgs...)
	}
	tenant, err := o.rowTenant(ctx)
	if err != nil || len(msgs) == 0 {
		return err
	}
	st := cached(o.route, o.static, tenant, o.build)
	rows := make([][]any, 0, len(msgs))
	for _, m := range msgs {
		if !m.Tenant.IsZero() && m.Tenant != tenant {
			return &tenancy.Error{Code: tenancy.CodeForeignTenant, Module: o.c.module, Backend: rules.Name, Route: o.spec.name,
				Detail: fmt.Sprintf("message %s is for tenant %s, written under %s", m.EventID, m.Tenant, tenant),
				Fix:    "write each message under a context bound to its own tenant, or leave Message.Tenant empty"}
		}
		if m.EventID == "" {
			m.EventID = newEventID()
		}
		// The trace context of ctx (under Write, the write's own span)
		// rides in the row, so the relay's delivery links back to it.
		m.Headers = o.c.tel.Inject(ctx, m.Headers)
		var headers []byte
		if m.Headers != nil {
			if headers, err = json.Marshal(m.Headers); err != nil {
				return err
			}
		}
		rows = append(rows, []any{tenant.Bytes(), m.EventID, m.Topic, m.Key, m.Payload, jsonArg(headers)})
	}
	if st.unprepared {
		// A batch runs in the connection's default mode, which prepares:
		// multi-row statements in the exec mode instead, in chunks that stay
		// under the protocol's 65,535 parameters.
		for c := range slices.Chunk(rows, 1000) {
			if _, err := tx.Exec(ctx, st.insertRows(len(c)), st.mode(slices.Concat(c...))...); err != nil {
				return err
			}
		}
		return nil
	}
	b := &pgx.Batch{}
	for _, r := range rows {
		b.Queue(st.insert, st.mode(r)...)
	}
	return tx.SendBatch(ctx, b).Close()
}

// insertRows is the insert of n messages in one statement.
func (st *outboxStmts) insertRows(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + st.table + " (tenant_id, event_id, topic, key, payload, headers) VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for j := range 6 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("$" + itoa(i*6+j+1))
		}
		b.WriteString(")")
	}
	return b.String()
}

func newEventID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Claim takes up to limit undelivered rows with FOR UPDATE SKIP LOCKED in
// a transaction held until Complete or Abandon. Under a bound ctx (a
// sharded pass) it claims only that tenant's rows, from its schema or pool
// where the route resolves one; unbound, the route must be tenant-global.
func (o *Outbox) Claim(ctx context.Context, limit int) (outbox.Batch, error) {
	return o.claim(ctx, limit, nil)
}

// ClaimSkipping implements outbox.SkippingSource: Claim, leaving out the
// rows of the tenants in skip (those the relay has parked), so that they
// never fill a batch ahead of other tenants' rows. A bound claim reads one
// tenant's rows: it skips nothing.
func (o *Outbox) ClaimSkipping(ctx context.Context, limit int, skip []tenancy.ID) (outbox.Batch, error) {
	return o.claim(ctx, limit, skip)
}

func (o *Outbox) claim(ctx context.Context, limit int, skip []tenancy.ID) (outbox.Batch, error) {
	if o.placed != nil {
		// A claim counts as a write: it locks rows it will mark delivered,
		// so a move's fence refuses it (tenant_moving) rather than let it
		// mark rows of the copy being taken.
		in, end, err := o.placed.Pick(ctx, true)
		if err != nil {
			return nil, err
		}
		defer end()
		return in.claim(ctx, limit, skip)
	}
	if err := outsideUnit(ctx, o.route, "a claim holds a transaction of its own until Complete or Abandon"); err != nil {
		return nil, err
	}
	tenant, bound := tenancy.FromContext(ctx)
	if !bound && o.spec.decision.NeedsTenant {
		return nil, o.refuse(ctx, o.unbound())
	}
	st := cached(o.route, o.static, tenant, o.build)
	// A relay's pass, not a route call: untraced, so an idle relay's polls
	// add no spans (its deliveries are the destination's calls).
	tx, release, err := beginTx(ctx, tenant, o.reach)
	if err != nil {
		return nil, err
	}
	b := &claim{tx: tx, release: release, stmts: st, ids: map[msgKey]int64{}}
	var rows pgx.Rows
	var order map[int64]int // a tenant-global claim's delivery order, by row id
	if bound {
		rows, err = tx.Query(ctx, st.claimTenant, st.mode([]any{limit, tenant.Bytes()})...)
	} else {
		skipped := make([]string, len(skip))
		for i, id := range skip {
			skipped[i] = id.Hex() // the zero ID too: its String is empty
		}
		var picked []int64
		if picked, err = o.fairPick(ctx, tx, st, limit, skipped); err == nil {
			order = make(map[int64]int, len(picked))
			for i, id := range picked {
				order[id] = i
			}
			rows, err = tx.Query(ctx, st.fairLock, st.mode([]any{picked})...)
		}
	}
	if err != nil {
		b.Abandon(ctx)
		return nil, err
	}
	var id int64
	var tb [16]byte
	var headers []byte
	var m outbox.Message
	_, err = pgx.ForEachRow(rows, []any{&id, &tb, &m.EventID, &m.Topic, &m.Key, &m.Payload, &headers}, func() error {
		msg := m
		msg.Tenant, _ = tenancy.IDFromBytes(tb)
		b.ids[msgKey{msg.Tenant, msg.EventID}] = id
		if len(headers) > 0 {
			if err := json.Unmarshal(headers, &msg.Headers); err != nil {
				return err
			}
		}
		b.msgs = append(b.msgs, msg)
		return nil
	})
	if err != nil {
		b.Abandon(ctx)
		return nil, err
	}
	if order != nil {
		rowID := func(m outbox.Message) int64 { return b.ids[msgKey{m.Tenant, m.EventID}] }
		slices.SortFunc(b.msgs, func(x, y outbox.Message) int { return order[rowID(x)] - order[rowID(y)] })
	}
	return b, nil
}

// claim is one claimed batch: its rows stay locked until it ends.
type claim struct {
	tx      pgx.Tx
	release func()
	stmts   *outboxStmts
	msgs    []outbox.Message
	ids     map[msgKey]int64 // row id of each claimed message
	done    bool
}

// msgKey names an outbox row: event ids are unique per tenant only.
type msgKey struct {
	tenant tenancy.ID
	event  string
}

func (b *claim) Messages() []outbox.Message { return b.msgs }

// Complete marks delivered rows done and commits, releasing the others.
// Only rows of this claim are marked; a message it did not claim is
// ignored.
func (b *claim) Complete(ctx context.Context, delivered []outbox.Message) error {
	if b.done {
		return errors.New("postgres outbox: batch already ended")
	}
	b.done = true
	defer b.release()
	ids := make([]int64, 0, len(delivered))
	for _, m := range delivered {
		if id, ok := b.ids[msgKey{m.Tenant, m.EventID}]; ok {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		if _, err := b.tx.Exec(ctx, b.stmts.complete, b.stmts.mode([]any{ids})...); err != nil {
			_ = b.tx.Rollback(ctx) // the claim is released either way; err says why
			return err
		}
	}
	return b.tx.Commit(ctx)
}

// Abandon rolls the claim back: nothing is marked delivered.
func (b *claim) Abandon(ctx context.Context) {
	if b.done {
		return
	}
	b.done = true
	defer b.release()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = b.tx.Rollback(rctx) // a dead connection releases its locks too
}

// sweep deletes rows delivered longer ago than retain: the bound tenant's
// under a sharded pass, every row otherwise.
func (o *Outbox) sweep(ctx context.Context, retain time.Duration) (int64, error) {
	tenant, bound := tenancy.FromContext(ctx)
	if !bound && o.spec.decision.NeedsTenant {
		return 0, o.refuse(ctx, o.unbound())
	}
	st := cached(o.route, o.static, tenant, o.build)
	// A relay's pass: untraced, as Claim.
	pool, release, err := o.reach(ctx, tenant)
	if err != nil {
		return 0, err
	}
	defer release()
	var tag pgconn.CommandTag
	if bound {
		tag, err = pool.Exec(ctx, st.sweepTenant, st.mode([]any{retain.Milliseconds(), tenant.Bytes()})...)
	} else {
		tag, err = pool.Exec(ctx, st.sweep, st.mode([]any{retain.Milliseconds()})...)
	}
	return tag.RowsAffected(), err
}

var _ outbox.SkippingSource = (*Outbox)(nil)
