package postgres

import (
	"context"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// setRule runs the rest of the test under a copy of the rules with kind's
// rule edited. Tests using it must not run in parallel.
func setRule(t *testing.T, kind floors.Kind, edit func(*floors.KindRule)) {
	t.Helper()
	testsvc.UseRule(t, &rules, Rules(), kind, edit)
}

// scopeProbe is what one app built under the current rules shows: the
// matrix row of its one route, the error of a call with no tenant bound,
// and which schemas the rows of a bound call and of the unbound call (when
// it was let through) landed in.
type scopeProbe struct {
	reached tenancy.Tier
	unbound error
	schemas map[string]int64
}

// probeScope builds a module with route (over the per-tenant table tbl)
// under prefix, writes once bound to tenant A and once with unbound's
// context, and reads back where the rows are.
func probeScope(t *testing.T, url, prefix, tbl string, route Option, name string,
	write func(ctx context.Context, obj any) error, unbound context.Context) scopeProbe {
	t.Helper()
	ctx := context.Background()
	var (
		c   *Client
		obj any
		m   floors.Matrix
	)
	app := fx.New(fx.NopLogger, Module("pg", Connect(url), SchemaPrefix(prefix), route),
		fx.Invoke(func(l modules.Live) { m = l.Matrix() }),
		fx.Invoke(fx.Annotate(func(cl *Client) { c = cl }, fx.ParamTags(`name:"pg"`))),
		fx.Invoke(fx.Annotate(func(k *Counter) {
			if k != nil {
				obj = k
			}
		}, fx.ParamTags(`name:"`+name+`" optional:"true"`))),
		fx.Invoke(fx.Annotate(func(o *Outbox) {
			if o != nil {
				obj = o
			}
		}, fx.ParamTags(`name:"`+name+`" optional:"true"`))),
	)
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(ctx) }()
	var p scopeProbe
	for _, r := range m.Rows {
		if r.Route == name {
			p.reached = r.Reached
		}
	}
	if err := c.Provision(ctx, tenancytest.TenantA); err != nil {
		t.Fatal(err)
	}
	if err := write(tenancy.WithTenant(ctx, tenancytest.TenantA), obj); err != nil {
		t.Fatalf("bound write: %v", err)
	}
	p.unbound = write(unbound, obj)

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT table_schema FROM information_schema.tables WHERE table_name = $1 AND starts_with(table_schema, $2)", tbl, prefix)
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	p.schemas = map[string]int64{}
	for _, s := range schemas {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{s, tbl}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			p.schemas[s] = n
		}
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{s}.Sanitize()+" CASCADE"); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func uniquePrefix(tag string) string {
	return "td" + tag + strconv.FormatInt(time.Now().UnixNano()%1e12, 36) + "_"
}

// TestCounterScopeFollowsRule: giving the counter kind the rule "the
// resolver is passed the tenant only when tenant-aware" moves both the
// matrix row (namespace → none) and the runtime (the tenant's schema and a
// refused unbound call → one shared schema that takes unbound calls).
func TestCounterScopeFollowsRule(t *testing.T) {
	url := testsvc.PostgresURL(t)
	ctx := context.Background()
	add := func(ctx context.Context, obj any) error { _, err := obj.(*Counter).Add(ctx, "n", 1); return err }
	route := CounterRoute("hits", CounterConfig{Table: naming.PerTenant("hits")})

	prefix := uniquePrefix("c")
	p := probeScope(t, url, prefix, "hits", route, "hits", add, ctx)
	if p.reached != tenancy.Namespace {
		t.Errorf("default rule: reached %s, want namespace", p.reached)
	}
	tenancytest.RequireUnbound(t, p.unbound, "pg", "postgres", "hits")
	if want := map[string]int64{SchemaName(prefix, tenancytest.TenantA): 1}; !maps.Equal(p.schemas, want) {
		t.Errorf("default rule: rows in %v, want %v", p.schemas, want)
	}

	setRule(t, kindCounter, func(r *floors.KindRule) { r.ResolverCountsOnlyWhenTenantAware = true })
	prefix = uniquePrefix("c")
	p = probeScope(t, url, prefix, "hits", route, "hits", add, ctx)
	if p.reached != tenancy.None {
		t.Errorf("flipped rule: reached %s, want none", p.reached)
	}
	if p.unbound != nil {
		t.Errorf("flipped rule: unbound call refused: %v", p.unbound)
	}
	// One row, counted twice: A's call and the unbound one share a schema.
	if want := map[string]int64{SchemaName(prefix, tenancy.ID{}): 1}; !maps.Equal(p.schemas, want) {
		t.Errorf("flipped rule: rows in %v, want %v", p.schemas, want)
	}
}

// TestOutboxScopeFollowsRule: the outbox kind's exception lives in Rules
// only. Without it, a plain outbox over a per-tenant table reaches
// namespace, writes into the tenant's schema and refuses the tenant-global
// scope; with it (the shipped rule), it reaches none and every row lands in
// one shared schema.
func TestOutboxScopeFollowsRule(t *testing.T) {
	url := testsvc.PostgresURL(t)
	global := tenancy.WithGlobal(context.Background())
	write := func(ctx context.Context, obj any) error {
		return obj.(*Outbox).Write(ctx, outbox.Message{EventID: strconv.FormatInt(time.Now().UnixNano(), 36), Topic: "t"})
	}
	route := OutboxRoute("events", OutboxConfig{Table: naming.PerTenant("events")})

	prefix := uniquePrefix("o")
	p := probeScope(t, url, prefix, "events", route, "events", write, global)
	if p.reached != tenancy.None {
		t.Errorf("shipped rule: reached %s, want none", p.reached)
	}
	if p.unbound != nil {
		t.Errorf("shipped rule: tenant-global write refused: %v", p.unbound)
	}
	if want := map[string]int64{SchemaName(prefix, tenancy.ID{}): 2}; !maps.Equal(p.schemas, want) {
		t.Errorf("shipped rule: rows in %v, want %v", p.schemas, want)
	}

	setRule(t, kindOutbox, func(r *floors.KindRule) { r.ResolverCountsOnlyWhenTenantAware = false })
	prefix = uniquePrefix("o")
	p = probeScope(t, url, prefix, "events", route, "events", write, global)
	if p.reached != tenancy.Namespace {
		t.Errorf("flipped rule: reached %s, want namespace", p.reached)
	}
	tenancytest.RequireUnbound(t, p.unbound, "pg", "postgres", "events")
	if want := map[string]int64{SchemaName(prefix, tenancytest.TenantA): 1}; !maps.Equal(p.schemas, want) {
		t.Errorf("flipped rule: rows in %v, want %v", p.schemas, want)
	}
}
