package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestDedicatedClaimAcrossModules: two routed modules whose resolvers put
// tenant A (through pg1) and tenant B (through pg2) in one database. The
// claim on a database is the process's, not a module's: B is refused with
// dedicated_target_shared naming pg2, on every call, and neither reads nor
// writes A's rows, although both modules' routes use the same table.
func TestDedicatedClaimAcrossModules(t *testing.T) {
	names, dsns := databases(t, 1, "")
	one := func(id tenancy.ID) routing.Resolver {
		return resolverOf(map[tenancy.ID]routing.Credentials{id: {Endpoint: dsns[0]}})
	}
	docs := postgres.DocumentConfig{Read: naming.Shared("docs"), Write: naming.Shared("docs")}
	rc := postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 2, MaxConnsPerClient: 1}}
	var app struct {
		fx.In
		C1 *postgres.Client          `name:"pg1"`
		C2 *postgres.Client          `name:"pg2"`
		D1 *postgres.Documents[item] `name:"docs1"`
		D2 *postgres.Documents[item] `name:"docs2"`
	}
	a := fx.New(fx.NopLogger,
		postgres.Module("pg1", postgres.Routed(one(tenancytest.TenantA), rc), modules.RequiredIsolation(tenancy.Dedicated), postgres.NamedOnly(),
			postgres.Document[item]("docs1", docs)),
		postgres.Module("pg2", postgres.Routed(one(tenancytest.TenantB), rc), modules.RequiredIsolation(tenancy.Dedicated), postgres.NamedOnly(),
			postgres.Document[item]("docs2", docs)),
		fx.Populate(&app))
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	provision(t, app.C1, tenancytest.TenantA)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	if _, err := app.D1.Create(ctxA, "a1", item{Name: "secret"}); err != nil {
		t.Fatal(err)
	}

	shared := func(op string, err error) {
		t.Helper()
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeDedicatedTargetShared || te.Module != "pg2" || te.Backend != "postgres" {
			t.Fatalf("B's %s through pg2 on A's database: %v", op, err)
		}
	}
	ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	shared("provision", app.C2.Provision(context.Background(), tenancytest.TenantB))
	_, err := app.D2.Get(ctxB, "a1")
	shared("get", err)
	_, err = app.D2.List(ctxB, document.Query{})
	shared("list", err)
	_, err = app.D2.Count(ctxB, document.Query{})
	shared("count", err)
	_, err = app.D2.Create(ctxB, "b1", item{Name: "b"})
	shared("create", err)
	shared("delete", app.D2.Delete(ctxB, "a1"))
	_, _, err = app.C2.Pool(ctxB)
	shared("pool", err)

	// Counted on the database itself, not through either module.
	u, _ := url.Parse(dsns[0])
	conn, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM docs").Scan(&n); err != nil || n != 1 {
		t.Fatalf("database %s holds %d rows (%v), want A's one", names[0], n, err)
	}
	if r, err := app.D1.Get(ctxA, "a1"); err != nil || r.Value.Name != "secret" {
		t.Fatalf("A's record after B's attempts: %+v, %v", r, err)
	}
}
