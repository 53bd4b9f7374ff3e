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

// IdempotencyConfig wires an idempotency store: a key's first result,
// replayed to retries until it expires. The tier rules are the inbox's.
type IdempotencyConfig struct {
	TenantAware bool
	Table       naming.Name
	// TTL is how long a stored result is replayed (default 24h).
	TTL time.Duration
}

// IdempotencyRoute adds an idempotency store route and provides
// *Idempotency under its name.
func IdempotencyRoute(name string, ic IdempotencyConfig) Option {
	if ic.TTL <= 0 {
		ic.TTL = 24 * time.Hour
	}
	return modules.Own(func(c *config) {
		addTableRoute(c, name, kindIdempotency, ic.TenantAware, ic.Table, "name the idempotency table",
			"key text NOT NULL, result bytea, created_at timestamptz NOT NULL DEFAULT pg_catalog.now(), expires_at timestamptz NOT NULL, ", "key",
			func(r route) *Idempotency { return &Idempotency{route: r, cfg: ic} })
	})
}

// Idempotency maps keys to stored results.
type Idempotency struct {
	route
	cfg    IdempotencyConfig
	static *idemStmts
}

type idemStmts struct {
	sql
	table                              string
	get, put, del, count, sweep, locks string
}

func (x *Idempotency) initStatic() { x.static = staticSet(x.route, x.build) }

func (x *Idempotency) build(tenant tenancy.ID) *idemStmts {
	s := sql{tagged: x.spec.decision.Tagged}
	t := x.qualified(x.cfg.Table, tenant)
	key := "key"
	if s.tagged {
		key = "tenant_id, key"
	}
	return &idemStmts{sql: s, table: t,
		get: "SELECT result FROM " + t + " WHERE " + s.where() + "key = " + s.p(1) + " AND expires_at > pg_catalog.now()",
		put: "INSERT INTO " + t + " (" + s.col() + "key, result, expires_at) VALUES (" + s.val() + s.p(1) + ", " + s.p(2) +
			", pg_catalog.now() + " + s.p(3) + " * '1 millisecond'::pg_catalog.interval) ON CONFLICT (" + key + ") DO UPDATE SET result = EXCLUDED.result, " +
			"created_at = pg_catalog.now(), expires_at = EXCLUDED.expires_at",
		del:   "DELETE FROM " + t + " WHERE " + s.where() + "key = " + s.p(1),
		count: "SELECT pg_catalog.count(*) FROM " + t + " WHERE " + s.where() + "expires_at > pg_catalog.now()",
		sweep: "DELETE FROM " + t + " WHERE " + s.where() + "expires_at < pg_catalog.now() - " + s.p(1) + " * '1 millisecond'::pg_catalog.interval",
		// One lock per (table, tenant, key) serializes first calls.
		locks: "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended($1, 0))",
	}
}

func (x *Idempotency) begin(ctx context.Context) (context.Context, tenancy.ID, *idemStmts, querier, func(), error) {
	return beginCall(ctx, x.route, x.static, x.build)
}

// Do returns key's stored result when one has not expired (replayed =
// true); otherwise it runs fn, stores its result for the TTL and returns
// it. Concurrent first calls for one key run fn once: the others wait and
// replay. A failing fn stores nothing.
func (x *Idempotency) Do(ctx context.Context, key string, fn func(ctx context.Context) ([]byte, error)) (result []byte, replayed bool, err error) {
	ctx, tenant, st, pool, release, err := x.begin(ctx)
	if err != nil {
		return nil, false, err
	}
	defer release()
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, st.locks, st.table+"/"+tenant.String()+"/"+key); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, st.get, st.mode(args(st.tagged, tenant, key))...).Scan(&result)
		if err == nil {
			replayed = true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if result, err = fn(ctx); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, st.put, st.mode(args(st.tagged, tenant, key, result, x.cfg.TTL.Milliseconds()))...)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return result, replayed, nil
}

// Get returns key's unexpired stored result.
func (x *Idempotency) Get(ctx context.Context, key string) (_ []byte, _ bool, err error) {
	defer x.notProvisioned(&err)
	result, err := queryOne[[]byte](ctx, x.route, x.static, x.build, func(st *idemStmts) string { return st.get }, key)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	return result, err == nil, err
}

// Delete forgets key, so the next Do runs again; deleted is false when
// nothing was stored under key (in the bound tenant's scope).
func (x *Idempotency) Delete(ctx context.Context, key string) (deleted bool, err error) {
	defer x.notProvisioned(&err)
	n, err := execRows(ctx, x.route, x.static, x.build, func(st *idemStmts) string { return st.del }, key)
	return err == nil && n > 0, err
}

// Count returns how many unexpired keys are stored (the bound tenant's
// when the store is tenant-scoped).
func (x *Idempotency) Count(ctx context.Context) (_ int, err error) {
	defer x.notProvisioned(&err)
	return queryOne[int](ctx, x.route, x.static, x.build, func(st *idemStmts) string { return st.count })
}

// sweep deletes entries expired for longer than retain.
func (x *Idempotency) sweep(ctx context.Context, retain time.Duration) (int64, error) {
	return execRows(ctx, x.route, x.static, x.build, func(st *idemStmts) string { return st.sweep }, retain.Milliseconds())
}
