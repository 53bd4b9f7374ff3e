package postgres

import (
	"context"
	"errors"
	"reflect"

	"github.com/jackc/pgx/v5"

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
	return func(c *config) {
		spec := &routeSpec{name: name, kind: kindCounter, tenantAware: cc.TenantAware, typ: reflect.TypeFor[*Counter](),
			rels: []roleRel{{"table", cc.Table}}}
		if err := validName(cc.Table.Base(), maxIdent); err != nil {
			c.errs = append(c.errs, rules.WiringInvalid(c.name, name, err.Error(), "set CounterConfig.Table to a lower-case table name"))
		}
		spec.ddl = func(cl *Client, tenant tenancy.ID) []string {
			s := sql{tagged: spec.decision.Tagged}
			return []string{"CREATE TABLE IF NOT EXISTS " + route{cl, spec}.qualified(cc.Table, tenant) + " (" +
				s.tenantColumn() + "name text NOT NULL, value bigint NOT NULL, " + s.key("name") + ")"}
		}
		spec.provide = provideRoute(func(cl *Client) *Counter {
			k := &Counter{route: route{cl, spec}, cfg: cc}
			if !k.perTenant() {
				k.static = k.build(tenancy.ID{})
			}
			return k
		})
		c.routes = append(c.routes, spec)
	}
}

// Counter is a counter route: named int64 counters per tenant.
type Counter struct {
	route
	cfg    CounterConfig
	static *counterStmts
}

type counterStmts struct {
	sql
	add, get, del string
}

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

func (k *Counter) begin(ctx context.Context) (context.Context, tenancy.ID, *counterStmts, querier, func(), error) {
	return beginCall(ctx, k.route, k.static, k.build)
}

// Add adds delta to the counter (creating it at 0) and returns the result.
func (k *Counter) Add(ctx context.Context, name string, delta int64) (_ int64, err error) {
	defer k.notProvisioned(&err)
	ctx, tenant, st, pool, release, err := k.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	var v int64
	err = pool.QueryRow(ctx, st.add, st.mode(args(st.tagged, tenant, name, delta))...).Scan(&v)
	return v, err
}

// Get returns the counter's value; a missing counter is 0.
func (k *Counter) Get(ctx context.Context, name string) (_ int64, err error) {
	defer k.notProvisioned(&err)
	ctx, tenant, st, pool, release, err := k.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	var v int64
	err = pool.QueryRow(ctx, st.get, st.mode(args(st.tagged, tenant, name))...).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

// Delete removes the counter and reports whether it existed.
func (k *Counter) Delete(ctx context.Context, name string) (deleted bool, err error) {
	defer k.notProvisioned(&err)
	ctx, tenant, st, pool, release, err := k.begin(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	tag, err := pool.Exec(ctx, st.del, st.mode(args(st.tagged, tenant, name))...)
	return err == nil && tag.RowsAffected() > 0, err
}
