package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// CounterConfig wires a counter route over one table.
type CounterConfig struct {
	TenantAware bool
	Table       naming.Name
}

// CounterRoute adds a counter route and provides *Counter.
func CounterRoute(name string, cc CounterConfig) Option {
	return modules.Own(func(c *config) {
		cc := cc // the option may be applied more than once (Placements)
		cc.Table = c.inShared(cc.Table)
		addTableRoute(c, name, kindCounter, cc.TenantAware, cc.Table, "set CounterConfig.Table to a lower-case table name",
			"name text NOT NULL, value bigint NOT NULL, ", "name",
			func(r route) *Counter { return &Counter{route: r, cfg: cc} })
		c.routes[len(c.routes)-1].placedProvide = placedProvider(func(p *modules.PlacedRoute[*Counter]) *Counter { return &Counter{placed: p} })
	})
}

// Counter is a counter route: named int64 counters per tenant.
type Counter struct {
	route
	cfg    CounterConfig
	static *counterStmts
	// placed: see Documents.placed.
	placed *modules.PlacedRoute[*Counter]
}

type counterStmts struct {
	sql
	add, get, del string
}

func (k *Counter) initStatic() { k.static = staticSet(k.route, k.build) }

func (k *Counter) build(tenant tenancy.ID) *counterStmts {
	s := sql{tagged: k.spec.decision.Tagged}
	t := k.qualified(k.cfg.Table, tenant)
	conflict := "(name)"
	if s.tagged {
		conflict = "(tenant_id, name)"
	}
	return &counterStmts{
		sql: s,
		add: "INSERT INTO " + t + " AS c (" + s.col() + "name, value) VALUES (" + s.val() + s.p(1) + ", " + s.p(2) +
			") ON CONFLICT " + conflict + " DO UPDATE SET value = c.value + EXCLUDED.value RETURNING value",
		get: "SELECT value FROM " + t + " WHERE " + s.where() + "name = " + s.p(1),
		del: "DELETE FROM " + t + " WHERE " + s.where() + "name = " + s.p(1),
	}
}

// Add adds delta to the counter (creating it at 0) and returns the result.
func (k *Counter) Add(ctx context.Context, name string, delta int64) (_ int64, err error) {
	if k.placed != nil {
		in, end, err := k.placed.Pick(ctx, true)
		if err != nil {
			return 0, err
		}
		defer end()
		return in.Add(ctx, name, delta)
	}
	defer k.notProvisioned(&err)
	return queryOne[int64](ctx, k.route, k.static, k.build, func(st *counterStmts) string { return st.add }, name, delta)
}

// Get returns the counter's value; a missing counter is 0.
func (k *Counter) Get(ctx context.Context, name string) (_ int64, err error) {
	if k.placed != nil {
		in, end, err := k.placed.Pick(ctx, false)
		if err != nil {
			return 0, err
		}
		defer end()
		return in.Get(ctx, name)
	}
	defer k.notProvisioned(&err)
	v, err := queryOne[int64](ctx, k.route, k.static, k.build, func(st *counterStmts) string { return st.get }, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

// Delete removes the counter and reports whether it existed.
func (k *Counter) Delete(ctx context.Context, name string) (deleted bool, err error) {
	if k.placed != nil {
		in, end, err := k.placed.Pick(ctx, true)
		if err != nil {
			return false, err
		}
		defer end()
		return in.Delete(ctx, name)
	}
	defer k.notProvisioned(&err)
	n, err := execRows(ctx, k.route, k.static, k.build, func(st *counterStmts) string { return st.del }, name)
	return err == nil && n > 0, err
}
