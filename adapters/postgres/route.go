package postgres

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// route is what every route object shares: its client and wiring.
type route struct {
	c    *Client
	spec *routeSpec
}

// unbound is the route's tenant_unbound error.
func (r route) unbound() error { return rules.Unbound(r.c.module, r.spec.name) }

// qualified is rel's quoted name for tenant: in the tenant's schema only
// when the rules resolve rel per tenant (see shared).
func (r route) qualified(rel naming.Name, tenant tenancy.ID) string {
	if r.spec.shared(rel) {
		tenant = tenancy.ID{}
	}
	return ident(rel, r.c.prefix, r.c.static, tenant).Sanitize()
}

// shared reports whether rel, wired per tenant, names one container for
// every tenant because the rules' decision resolves none of its roles per
// tenant: its resolver is passed the zero tenant.
func (s *routeSpec) shared(rel naming.Name) bool {
	if !rel.PerTenant() {
		return false
	}
	held := false
	for _, rr := range s.rels {
		if rr.rel == rel {
			if s.decision.ResolvesPerTenant(rr.role) {
				return false
			}
			held = true
		}
	}
	return held
}

// perTenant reports whether any relation of the route is resolved per
// tenant, so its statements must be built per tenant.
func (r route) perTenant() bool { return len(r.spec.decision.PerTenant) > 0 }

// staticSet is the statement set that serves every tenant, built once
// when no relation of the route resolves per tenant; nil otherwise, when
// cached builds sets per tenant.
func staticSet[S any](r route, build func(tenancy.ID) *S) *S {
	if r.perTenant() {
		return nil
	}
	return build(tenancy.ID{})
}

// cached returns the route's statements for tenant: built once for a
// static route, once per (tenant, route) otherwise.
func cached[S any](r route, static *S, tenant tenancy.ID, build func(tenancy.ID) *S) *S {
	if static != nil {
		return static
	}
	k := stmtKey{tenant: tenant, route: r.spec.name}
	if v, ok := r.c.stmts.get(k); ok {
		return v.(*S)
	}
	s := build(tenant)
	r.c.stmts.put(k, s)
	return s
}

// preparedSet returns tenant's statements while (tenant, route) is one of
// the prepared pairs (see stmtCache), building and caching them; nil past
// the budget, where the caller renders the one statement it runs from the
// route's templates and caches nothing.
func preparedSet[S any](r route, tenant tenancy.ID, build func(tenancy.ID) *S) *S {
	k := stmtKey{tenant: tenant, route: r.spec.name}
	if v, ok := r.c.stmts.get(k); ok {
		return v.(*S)
	}
	if !r.c.stmts.reserve(k) {
		return nil
	}
	s := build(tenant)
	r.c.stmts.put(k, s)
	return s
}

// args prepends the tenant to a tagged statement's arguments.
func args(tagged bool, tenant tenancy.ID, rest ...any) []any {
	if !tagged {
		return rest
	}
	a := make([]any, 0, len(rest)+1) // one allocation, sized once
	return append(append(a, tenant.Bytes()), rest...)
}

// sql holds the placeholder layout of a possibly tagged statement: the
// tenant is $1 when tagged, and the other parameters follow it. An
// unprepared set runs without prepared statements (see stmtCache, mode).
type sql struct{ tagged, unprepared bool }

func (s *sql) setUnprepared()     { s.unprepared = true }
func (s *sql) isUnprepared() bool { return s.unprepared }

// mode readies a's arguments for the set's statements. A prepared set
// runs them as they are. An unprepared set runs in pgx's exec mode: one
// round trip, nothing prepared or described, so nothing is cached per
// statement text on either side however many tenants a connection serves.
// That mode sends text parameters whose type the server infers from the
// statement, so a jsonb value travels as a string (as []byte it would be
// bytea) and a tenant id as a UUID.
func (s sql) mode(a []any) []any {
	if !s.unprepared {
		copied := false // a may be shared (a cached statement's arguments)
		for i, v := range a {
			if j, ok := v.(jsonArg); ok {
				if !copied {
					a, copied = slices.Clone(a), true
				}
				a[i] = []byte(j)
			}
		}
		return a
	}
	out := make([]any, 0, len(a)+1)
	out = append(out, pgx.QueryExecModeExec)
	for _, v := range a {
		switch v := v.(type) {
		case jsonArg:
			if v == nil {
				out = append(out, nil)
			} else {
				out = append(out, string(v))
			}
		case [16]byte:
			out = append(out, pgtype.UUID{Bytes: v, Valid: true})
		default:
			out = append(out, v)
		}
	}
	return out
}

// jsonArg marks a jsonb parameter for mode; nil is SQL NULL.
type jsonArg []byte

// p is the placeholder of the i-th (1-based) non-tenant parameter.
func (s sql) p(i int) string {
	if s.tagged {
		i++
	}
	return "$" + itoa(i)
}

// where is the tenant predicate prefix of a WHERE clause.
func (s sql) where() string {
	if s.tagged {
		return "tenant_id = $1 AND "
	}
	return ""
}

// col and val prefix the tenant column and value of an INSERT.
func (s sql) col() string {
	if s.tagged {
		return "tenant_id, "
	}
	return ""
}

func (s sql) val() string {
	if s.tagged {
		return "$1, "
	}
	return ""
}

// tenantColumn is the tagged column: the default tenant by default, so
// turning tenancy on hides no existing row.
func (s sql) tenantColumn() string {
	if s.tagged {
		return "tenant_id uuid NOT NULL DEFAULT '" + tenancy.Default.String() + "', "
	}
	return ""
}

func (s sql) key(col string) string {
	if s.tagged {
		return "PRIMARY KEY (tenant_id, " + col + ")"
	}
	return "PRIMARY KEY (" + col + ")"
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

var jsonMarshal = json.Marshal

// execOne runs stmt, which touches at most one row, and returns none when
// it touched nothing: the bound tenant has no such row.
func execOne(ctx context.Context, pool querier, stmt string, a []any, none error) error {
	tag, err := pool.Exec(ctx, stmt, a...)
	if err == nil && tag.RowsAffected() == 0 {
		return none
	}
	return err
}

// beginCall resolves one call's tenant, statements and pool, and the
// context its statements run under (see connect); the caller releases the
// pool when err is nil.
func beginCall[S any](ctx context.Context, r route, static *S, build func(tenancy.ID) *S) (context.Context, tenancy.ID, *S, querier, func(), error) {
	ctx, tenant, pool, release, err := enter(ctx, r)
	if err != nil {
		return ctx, tenant, nil, nil, nil, err
	}
	return ctx, tenant, cached(r, static, tenant, build), pool, release, nil
}

// stmtSet is a route's statement set: a struct embedding sql.
type stmtSet interface{ layout() sql }

func (s sql) layout() sql { return s }

// runOne is one call that runs the statement pick chooses from the call's
// set, its arguments rest after the bound tenant when the set is tagged,
// through do; the connection is released when do returns.
func runOne[R any, S stmtSet](ctx context.Context, r route, static *S, build func(tenancy.ID) *S, pick func(*S) string, rest []any,
	do func(ctx context.Context, q querier, stmt string, a []any) (R, error)) (R, error) {
	ctx, tenant, st, pool, release, err := beginCall(ctx, r, static, build)
	if err != nil {
		var none R
		return none, err
	}
	defer release()
	s := (*st).layout()
	return do(ctx, pool, pick(st), s.mode(args(s.tagged, tenant, rest...)))
}

// queryOne runs one statement (see runOne) and scans its one row into a V.
func queryOne[V any, S stmtSet](ctx context.Context, r route, static *S, build func(tenancy.ID) *S, pick func(*S) string, rest ...any) (V, error) {
	return runOne(ctx, r, static, build, pick, rest, func(ctx context.Context, q querier, stmt string, a []any) (v V, err error) {
		err = q.QueryRow(ctx, stmt, a...).Scan(&v)
		return v, err
	})
}

// execRows runs one statement (see runOne) and returns how many rows it
// touched.
func execRows[S stmtSet](ctx context.Context, r route, static *S, build func(tenancy.ID) *S, pick func(*S) string, rest ...any) (int64, error) {
	return runOne(ctx, r, static, build, pick, rest, func(ctx context.Context, q querier, stmt string, a []any) (int64, error) {
		tag, err := q.Exec(ctx, stmt, a...)
		return tag.RowsAffected(), err
	})
}

// queryRows runs one statement (see runOne) and hands its rows to collect
// before the connection is released.
func queryRows[R any, S stmtSet](ctx context.Context, r route, static *S, build func(tenancy.ID) *S, pick func(*S) string,
	collect func(pgx.Rows) (R, error), rest ...any) (R, error) {
	return runOne(ctx, r, static, build, pick, rest, func(ctx context.Context, q querier, stmt string, a []any) (R, error) {
		rows, err := q.Query(ctx, stmt, a...)
		if err != nil {
			var none R
			return none, err
		}
		return collect(rows)
	})
}

// beginTx begins a transaction on what open returns for tenant (see
// fromPool).
func beginTx[Q querier](ctx context.Context, tenant tenancy.ID, open func(context.Context, tenancy.ID) (Q, func(), error)) (pgx.Tx, func(), error) {
	return fromPool(ctx, tenant, open, func(q Q) (pgx.Tx, error) { return q.Begin(ctx) })
}

// fromPool takes one thing (a transaction, a connection) with take from
// what open returns for tenant, which it releases when take fails;
// otherwise the caller releases it once done with what was taken.
func fromPool[Q, T any](ctx context.Context, tenant tenancy.ID, open func(context.Context, tenancy.ID) (Q, func(), error), take func(Q) (T, error)) (T, func(), error) {
	var none T
	pool, release, err := open(ctx, tenant)
	if err != nil {
		return none, nil, err
	}
	t, err := take(pool)
	if err != nil {
		release()
		return none, nil, err
	}
	return t, release, nil
}

// enter admits one call through its route's entry (the kit's steps, then
// reachCall and the version gate): its tenant, what its statements run on
// and the context they run under, which carries the call's span, so the
// driver's own spans (otelpgx) nest under it; without telemetry it is
// ctx. The call is in flight until the caller runs release (when err is
// nil), after its last statement or its transaction's end, so an
// Offboard waits for it (an Idempotency.Do holds it across its function).
func enter(ctx context.Context, r route) (context.Context, tenancy.ID, querier, func(), error) {
	ctx, tenant, t, done, err := r.c.entries[r.spec].Enter(ctx)
	return ctx, tenant, t.q, done, err
}

// connect is the one way a call of any route reaches what its statements
// run on: the tenant's suspension, then the unit of work its context
// carries (see InTx), or else the tenant's pool (routed or shared); then
// the version gate. The caller releases it when err is nil, and runs its
// statements under the returned context: it carries the call's span, so
// the driver's own spans (otelpgx) nest under it. Without telemetry it is
// ctx.
func (r route) connect(ctx context.Context, tenant tenancy.ID) (context.Context, querier, func(), error) {
	if r.c.tel != nil {
		return r.tracedConnect(ctx, tenant)
	}
	q, release, err := r.reach(ctx, tenant)
	return ctx, q, release, err
}

// The call is in flight (Suspensions.Enter) until the caller releases
// it, after its last statement or its transaction's end, so an Offboard
// waits for it (an Idempotency.Do holds it across its function).
func (r route) reach(ctx context.Context, tenant tenancy.ID) (querier, func(), error) {
	end, err := r.c.suspensions.Enter(tenant, rules.Name, r.c.module, r.spec.name)
	if err != nil {
		return nil, nil, err
	}
	q, release, err := r.reachEntered(ctx, tenant)
	if err != nil {
		end()
		return nil, nil, err
	}
	if r.c.routed == nil { // the shared pool's release does nothing: no closure
		return q, end, nil
	}
	return q, modules.Both(release, end), nil
}

func (r route) reachEntered(ctx context.Context, tenant tenancy.ID) (querier, func(), error) {
	t, release, err := r.reachCall(ctx, tenant)
	if err != nil {
		return nil, nil, err
	}
	if err := r.current(ctx, tenant, t); err != nil {
		if release != nil {
			release()
		}
		return nil, nil, err
	}
	if release == nil {
		release = noRelease
	}
	return t.q, release, nil
}

// reached is what a call's entry reaches: where its statements run, and
// where the version gate reads (inside a unit of work, in a savepoint).
type reached struct{ q, version querier }

// reachCall is the entry's step: the unit of work the context carries
// (see InTx), or else the tenant's pool (routed or shared), whose release
// is nil on the shared pool (it does nothing: no closure).
func (r route) reachCall(ctx context.Context, tenant tenancy.ID) (reached, func(), error) {
	if u := unitOf(ctx); u != nil {
		if err := u.join(ctx, r); err != nil {
			return reached{}, nil, err
		}
		if r.spec.rowSecure {
			return reached{q: rowSecured{q: u.run, role: r.c.rowRole, tenant: tenant.String(), inUnit: true}, version: versionQuerier{u.run}}, nil, nil
		}
		return reached{q: u.run, version: versionQuerier{u.run}}, nil, nil
	}
	pool, release, err := r.c.conn(ctx, tenant)
	if err != nil {
		return reached{}, nil, routing.AtRoute(err, r.spec.name)
	}
	if r.c.routed == nil {
		release = nil
	}
	if r.spec.rowSecure {
		return reached{q: rowSecured{q: pool, role: r.c.rowRole, tenant: tenant.String()}, version: pool}, release, nil
	}
	return reached{q: pool, version: pool}, release, nil
}

// current is the entry's version gate on what the call reached.
func (r route) current(ctx context.Context, tenant tenancy.ID, t reached) error {
	return r.c.ensureCurrent(ctx, tenant, t.version, r.spec.name)
}
