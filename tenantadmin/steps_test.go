package tenantadmin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenantadmin"
	"github.com/tenantwire/tenantwire/tenanthttp"
)

// TestStepAcrossModulesServingOthers: two routed modules on the two real
// PostgreSQL servers, pg1 serving A only and pg2 B only, whose resolvers
// answer an uncoded error for a tenant they do not know. Offboarding B is
// a 409 tenant_step_failed whose every failing line names a code (pg1's
// resolver error) and whose pg2 line did its part: a report, never a 500.
func TestStepAcrossModulesServingOthers(t *testing.T) {
	only := func(id tenancy.ID, dsn string) routing.Resolver {
		return func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
			if tn == id {
				return routing.Credentials{Endpoint: dsn}, nil
			}
			return routing.Credentials{}, fmt.Errorf("unknown tenant %s", tn)
		}
	}
	table := "adm" + unique() + "_docs"
	dsn1, dsn2 := testsvc.PostgresURL(t), testsvc.PostgresSecondURL(t)
	t.Cleanup(func() {
		for _, dsn := range []string{dsn1, dsn2} {
			if p, err := pgxpool.New(context.Background(), dsn); err == nil {
				_, _ = p.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize())
				p.Close()
			}
		}
	})
	docs := postgres.DocumentConfig{Read: naming.Shared(table), Write: naming.Shared(table)}
	rc := postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 2, MaxConnsPerClient: 1}}
	var srv *tenanthttp.Server
	var tenants *modules.Tenants
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		postgres.Module("pg1", postgres.Routed(only(a, dsn1), rc), modules.RequiredIsolation(tenancy.Dedicated), postgres.NamedOnly(), modules.AllowTeardown(),
			postgres.Document[order]("docs1", docs)),
		postgres.Module("pg2", postgres.Routed(only(b, dsn2), rc), modules.RequiredIsolation(tenancy.Dedicated), postgres.NamedOnly(), modules.AllowTeardown(),
			postgres.Document[order]("docs2", docs)),
		tenanthttp.Module(tenanthttp.Config{TenantAddr: "127.0.0.1:0", OperatorAddr: "127.0.0.1:0", TrustedProxy: true}),
		tenantadmin.Module(tenantadmin.Config{Registry: migrate.NewMemoryRegistry()}),
		fx.Populate(&srv, &tenants))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	f := &fixture{t: t}
	op := "http://" + srv.OperatorAddr() + "/tenants/" + b.String()
	for _, step := range []string{"/provision", "/offboard?confirm=" + b.String()} {
		st, body := f.do("POST", op+step)
		got := strings.Join(lines(body, "report"), "; ")
		if st != 409 || body["code"] != string(tenancy.CodeTenantStepFailed) || body["ok"] != false ||
			!strings.HasPrefix(got, `pg1/postgres ok=false runs=<nil> skipped="" error="routing: resolving credentials of tenant `+b.String()) ||
			!strings.HasSuffix(got, `pg2/postgres ok=true runs=<nil> skipped="" error=""`) {
			t.Fatalf("%s: %d %v", step, st, body)
		}
		for _, l := range body["report"].([]any) {
			if m := l.(map[string]any); m["ok"] == false && m["code"] != string(tenancy.CodeTenantStepFailed) {
				t.Errorf("%s: a failing line with no code: %v", step, m)
			}
		}
	}
	if !tenants.Suspended(b) {
		t.Error("a failed offboard did not leave B suspended")
	}
}
