package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// placedApp is an app of one module offering all three placements: A at
// the default (tagged, the shared table), B placed at namespace (its own
// schema), C at dedicated (its own database), C's plan requiring it.
type placedApp struct {
	tenants *modules.Tenants
	docs    *postgres.Documents[item]
	hits    *postgres.Counter
	// at is each placement's own documents route, which docs picks from
	// per call: a fixed-tier route on the same pool and tables.
	at     map[tenancy.Tier]*postgres.Documents[item]
	table  string // the documents' table base name
	prefix string // the tenants' schema prefix
	db     string // C's database
	stop   func() // stops the app (again: a no-op)
}

func newPlacedApp(t *testing.T, opts ...postgres.Option) placedApp {
	t.Helper()
	return newPlacedAppA(t, false, opts...)
}

// newPlacedAppA is newPlacedApp whose resolver also gives A a database:
// its own, or C's when onC.
func newPlacedAppA(t *testing.T, onC bool, opts ...postgres.Option) placedApp {
	t.Helper()
	p := newPlacedSite(t, onC).start(t, modules.Lifecycle(), opts...)
	p.tenants.Place(tenancytest.TenantB, "orders", tenancy.Namespace)
	p.tenants.Place(tenancytest.TenantC, "orders", tenancy.Dedicated)
	p.tenants.SetPlan(tenancytest.TenantC, tenancy.Dedicated)
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB, tenancytest.TenantC} {
		if _, err := p.tenants.Provision(context.Background(), id); err != nil {
			t.Fatalf("provisioning %s: %v", id, err)
		}
	}
	return p
}

// placedSite is what the apps of a placed test share: the databases
// (C's, and A's), the shared table's name and the schema prefix. Each
// app started over it is one replica, or one process.
type placedSite struct {
	table, prefix, db string
	resolve           routing.Resolver
	// more are tenants past A, B and C with a database each, and
	// clients the routed clients' bound.
	more    []tenancy.ID
	clients int
}

func newPlacedSite(t *testing.T, onC bool) placedSite {
	t.Helper()
	return newPlacedSiteMore(t, onC, 0)
}

// newPlacedSiteMore is newPlacedSite with more tenants, each given a
// database of its own by the resolver.
func newPlacedSiteMore(t *testing.T, onC bool, more int) placedSite {
	t.Helper()
	names, dsns := databases(t, 2+more, "")
	run := unique()
	aDSN := dsns[1]
	if onC {
		aDSN = dsns[0]
	}
	own := map[tenancy.ID]routing.Credentials{tenancytest.TenantC: {Endpoint: dsns[0]}, tenancytest.TenantA: {Endpoint: aDSN}}
	s := placedSite{table: "pl" + run, prefix: "tw" + run + "_", db: names[0], clients: 4 + more}
	for i := range more {
		id := tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+100))
		s.more = append(s.more, id)
		own[id] = routing.Credentials{Endpoint: dsns[2+i]}
	}
	s.resolve = resolverOf(own)
	return s
}

// start starts the module "orders" over the site, offering all three
// placements, in an app with the lifecycle lc; its own pool connects to
// the test server.
func (s placedSite) start(t *testing.T, lc fx.Option, opts ...postgres.Option) placedApp {
	t.Helper()
	return s.startOn(t, lc, postgres.Connect(testsvc.PostgresURL(t)), opts...)
}

// startOn is start with the module's own pool from source (postgres.Use).
func (s placedSite) startOn(t *testing.T, lc fx.Option, source postgres.Option, opts ...postgres.Option) placedApp {
	t.Helper()
	p := placedApp{table: s.table, prefix: s.prefix, db: s.db, at: map[tenancy.Tier]*postgres.Documents[item]{}}
	mod := postgres.Module("orders", append([]postgres.Option{
		source,
		postgres.Routed(s.resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: s.clients, MaxConnsPerClient: 2}}),
		modules.Placements(modules.Offer{Tiers: []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}, Default: tenancy.Tagged}),
		postgres.SchemaPrefix(s.prefix), modules.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{TenantAware: true, Read: naming.PerTenant(s.table)}),
		postgres.CounterRoute("hits", postgres.CounterConfig{TenantAware: true, Table: naming.PerTenant(s.table + "_hits")}),
	}, opts...)...)
	var at [3]*postgres.Documents[item]
	places := []tenancy.Tier{tenancy.Tagged, tenancy.Namespace, tenancy.Dedicated}
	for i, tier := range places {
		mod = fx.Options(mod, named(modules.PlacedRouteName(modules.PlacedModuleName("orders", tier), "docs"), &at[i]))
	}
	app := fx.New(fx.NopLogger, lc, mod, fx.Populate(&p.tenants, &p.docs), named("hits", &p.hits))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	for i, tier := range places {
		p.at[tier] = at[i]
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.stop = func() { _ = app.Stop(context.Background()) }
	t.Cleanup(p.stop)
	return p
}

// TestPlacementsServeEachTenantAtItsOwn: one module serves a tagged, a
// namespace and a dedicated tenant at once; the boundary probes pass
// between every pair, both ways, on documents and counters; and each
// tenant's rows are where its placement says, read on the server: A's in
// the shared table under its tenant id, B's in its own schema, C's in its
// own database and nowhere on the shared server.
func TestPlacementsServeEachTenantAtItsOwn(t *testing.T) {
	p := newPlacedApp(t)
	a, b, c := tenancytest.TenantA, tenancytest.TenantB, tenancytest.TenantC
	for _, pair := range [][2]tenancy.ID{{a, b}, {b, a}, {b, c}, {c, b}, {a, c}, {c, a}} {
		id := "probe-" + pair[0].Hex()[:2] + pair[1].Hex()[:2]
		tenancytest.Boundary(t, tenancytest.Probe{A: pair[0], B: pair[1], RecordID: id,
			Write: func(ctx context.Context) error { _, err := p.docs.Create(ctx, id, item{Name: "x"}); return err },
			Read: func(ctx context.Context) (bool, error) {
				_, err := p.docs.Get(ctx, id)
				if errors.Is(err, document.ErrNotFound) {
					return false, nil
				}
				return err == nil, err
			},
			List: func(ctx context.Context) ([]string, error) {
				recs, err := p.docs.List(ctx, document.Query{})
				var ids []string
				for _, r := range recs {
					ids = append(ids, r.ID)
				}
				return ids, err
			},
			Delete:  func(ctx context.Context) error { return p.docs.Delete(ctx, id) },
			Cleanup: func(ctx context.Context) error { return p.docs.Delete(ctx, id) },
		})
		tenancytest.Boundary(t, tenancytest.Probe{A: pair[0], B: pair[1],
			Write: func(ctx context.Context) error { _, err := p.hits.Add(ctx, id, 1); return err },
			Read: func(ctx context.Context) (bool, error) {
				n, err := p.hits.Get(ctx, id)
				return n > 0, err
			},
			Cleanup: func(ctx context.Context) error { _, err := p.hits.Delete(ctx, id); return err },
		})
	}

	for _, id := range []tenancy.ID{a, b, c} {
		if _, err := p.docs.Create(tenancy.WithTenant(context.Background(), id), "where", item{Name: id.Hex()}); err != nil {
			t.Fatal(err)
		}
	}
	conn := superuser(t)
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	shared := `SELECT count(*) FROM public.` + p.table + ` WHERE tenant_id = $1 AND id = 'where'`
	if count(shared, a.Bytes()) != 1 || count(shared, b.Bytes()) != 0 || count(shared, c.Bytes()) != 0 {
		t.Fatal("the shared table holds another placement's rows, or not A's")
	}
	if n := count(`SELECT count(*) FROM ` + postgres.SchemaName(p.prefix, b) + `.` + p.table + ` WHERE id = 'where'`); n != 1 {
		t.Fatalf("B's schema holds %d of its rows", n)
	}
	if n := count(`SELECT count(*) FROM pg_namespace WHERE nspname IN ($1, $2)`, postgres.SchemaName(p.prefix, a), postgres.SchemaName(p.prefix, c)); n != 0 {
		t.Fatalf("%d schemas of A or C on the shared server: they are not placed at namespace", n)
	}
}

// TestPlacementUnderPlanServesNothing: a call with no tenant and a
// suspended tenant's call are refused as on any module; a tenant whose
// plan requires more than its placement gives is refused on every call,
// reads included, before anything is read; provisioning it is refused
// too; once placed at its plan it is served there.
func TestPlacementUnderPlanServesNothing(t *testing.T) {
	p := newPlacedApp(t)
	a := tenancytest.TenantA
	ctx := tenancy.WithTenant(context.Background(), a)
	if _, err := p.docs.Create(ctx, "kept", item{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	_, err := p.docs.Get(context.Background(), "kept")
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantUnbound, "postgres", "", "docs")
	p.tenants.Suspend(tenancytest.TenantC)
	_, err = p.docs.Get(tenancy.WithTenant(context.Background(), tenancytest.TenantC), "kept")
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantSuspended, "postgres", "orders.dedicated", "docs")

	p.tenants.SetPlan(a, tenancy.Namespace)
	_, err = p.docs.Get(ctx, "kept")
	e := tenancytest.RequireCode(t, err, tenancy.CodeTenantPlacementUnderFloor, "postgres", "orders", "docs")
	if e.Reached != tenancy.Tagged || e.Required != tenancy.Namespace {
		t.Fatalf("refusal: reached %v, required %v", e.Reached, e.Required)
	}
	_, err = p.hits.Add(ctx, "n", 1)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantPlacementUnderFloor, "postgres", "orders", "hits")
	_, err = p.tenants.Provision(context.Background(), a)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeTenantPlacementUnderFloor, "postgres", "orders", "")

	// Placed at namespace and provisioned there, A is served from its
	// schema, which holds none of its tagged rows: moving them is a move's.
	p.tenants.Place(a, "orders", tenancy.Namespace)
	if _, err := p.tenants.Provision(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if _, err := p.docs.Get(ctx, "kept"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("A at namespace reads its tagged record: %v", err)
	}
}

// TestPlacementsOffboardEachWhereItIs: offboarding runs each tenant's
// teardown at its placement only, and the erasure check finds nothing
// of it left there.
func TestPlacementsOffboardEachWhereItIs(t *testing.T) {
	p := newPlacedApp(t)
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB, tenancytest.TenantC} {
		ctx := tenancy.WithTenant(context.Background(), id)
		if _, err := p.docs.Create(ctx, "gone", item{Name: "x"}); err != nil {
			t.Fatal(err)
		}
		rep, err := p.tenants.Offboard(context.Background(), id)
		if err != nil {
			t.Fatalf("offboarding %s: %v", id, err)
		}
		ran := 0
		for _, l := range rep {
			if l.Skipped == "" {
				ran++
				if len(l.Checked) == 0 {
					t.Errorf("offboarding %s: %s checked nothing", id, l.Module)
				}
			}
		}
		if ran != 1 {
			t.Fatalf("offboarding %s ran %d modules' teardowns, want its placement's: %+v", id, ran, rep)
		}
	}
}

// TestPlacedArchiveCrossesPlacements: a tenant's archive exported at one
// placement imports into a tenant placed at another, record for record.
func TestPlacedArchiveCrossesPlacements(t *testing.T) {
	p := newPlacedApp(t)
	a, d := tenancytest.TenantA, tenancytest.FreshTenant(t)
	ctxA, ctxD := tenancy.WithTenant(context.Background(), a), tenancy.WithTenant(context.Background(), d)
	for i := range 20 {
		if _, err := p.docs.Create(ctxA, fmt.Sprint("r", i), item{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := p.tenants.Export(context.Background(), a, &buf); err != nil {
		t.Fatal(err)
	}
	p.tenants.Place(d, "orders", tenancy.Namespace)
	if _, err := p.tenants.Provision(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if err := p.tenants.Import(context.Background(), d, &buf); err != nil {
		t.Fatal(err)
	}
	if n, err := p.docs.Count(ctxD, document.Query{}); err != nil || n != 20 {
		t.Fatalf("D at namespace holds %d records (%v), want A's 20", n, err)
	}
	if rec, err := p.docs.Get(ctxD, "r7"); err != nil || rec.Value.N != 7 {
		t.Fatalf("D's r7: %+v %v", rec, err)
	}
}
