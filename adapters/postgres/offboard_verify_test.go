package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/outbox"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestOffboardVerifiesPostgresErasure: a tenant that wrote to a
// per-tenant document route (its schema), a tagged document route, a
// tagged idempotency store and a tagged outbox is offboarded with a
// report of every family checked and nothing left. Its rows of the tagged
// documents copied back after the teardown (by a module offboarded after
// it), or its schema made again, fail the offboard with
// tenant_erasure_incomplete naming the family and route; the tenant stays
// suspended.
func TestOffboardVerifiesPostgresErasure(t *testing.T) {
	run := unique()
	prefix := "tw" + run + "_"
	tagged := "vdocs_" + run
	db := superuser(t)
	type holder struct{}
	type planter struct{}
	var plant string // "rows" or "schema": what the planter writes back
	var (
		d, td   *postgres.Documents[item]
		idem    *postgres.Idempotency
		o       *postgres.Outbox
		tenants *modules.Tenants
	)
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix), postgres.AllowTeardown(),
		postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}),
		postgres.Document[item]("tagged", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared(tagged)}),
		postgres.IdempotencyRoute("idem", postgres.IdempotencyConfig{TenantAware: true, Table: naming.Shared("videm_" + run)}),
		postgres.OutboxRoute("out", postgres.OutboxConfig{TenantAware: true, Table: naming.Shared("vout_" + run)})),
		modules.Lifecycle(), named("orders", &d), named("tagged", &td), named("idem", &idem), named("out", &o), fx.Populate(&tenants),
		fx.Provide(func() holder { return holder{} }, func() planter { return planter{} }),
		// "aa" runs before "pg": it keeps the tenant's tagged rows aside;
		// "zz" runs after it and writes them (or the schema) back.
		modules.ProvideTenantState(func(holder) modules.TenantState {
			return modules.TenantState{Module: "aa", Backend: "test", Offboard: func(ctx context.Context, id tenancy.ID) error {
				_, err := db.Exec(ctx, "DROP TABLE IF EXISTS hold_"+run+"; CREATE TABLE hold_"+run+" AS SELECT * FROM "+tagged+" WHERE tenant_id = '"+id.String()+"'")
				return err
			}}
		}),
		modules.ProvideTenantState(func(planter) modules.TenantState {
			return modules.TenantState{Module: "zz", Backend: "test", Offboard: func(ctx context.Context, id tenancy.ID) error {
				var err error
				switch plant {
				case "rows":
					_, err = db.Exec(ctx, "INSERT INTO "+tagged+" SELECT * FROM hold_"+run)
				case "schema":
					_, err = db.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{postgres.SchemaName(prefix, id)}.Sanitize())
				}
				return err
			}}
		}))
	startApp(t, app)
	t.Cleanup(func() { _, _ = db.Exec(context.Background(), "DROP TABLE IF EXISTS hold_"+run) })

	use := func(a tenancy.ID) {
		t.Helper()
		provision(t, c, a)
		ctx := tenancy.WithTenant(context.Background(), a)
		for _, r := range []*postgres.Documents[item]{d, td} {
			if _, err := r.Create(ctx, "x", item{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := idem.Do(ctx, "op", func(context.Context) ([]byte, error) { return []byte("r"), nil }); err != nil {
			t.Fatal(err)
		}
		if err := o.Write(ctx, outbox.Message{EventID: "e-" + a.Hex(), Topic: "t", Payload: []byte("p")}); err != nil {
			t.Fatal(err)
		}
	}

	a := tenancytest.FreshTenant(t)
	use(a)
	rep, err := tenants.Offboard(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	var line modules.StepReport
	for _, l := range rep {
		if l.Module == "pg" {
			line = l
		}
	}
	checked := map[string]bool{}
	for _, f := range line.Checked {
		checked[f.Route+" "+f.Name] = true
	}
	for _, want := range []string{"tagged rows write", "idem rows table", "out rows table", " schema", " role"} {
		if !checked[want] {
			t.Errorf("the verifier did not check %q: %+v", want, line.Checked)
		}
	}
	if len(line.Left) != 0 {
		t.Fatalf("left after offboarding: %+v", line.Left)
	}

	for _, tc := range []struct{ plant, family string }{{"rows", `family "rows write"`}, {"schema", `family "schema"`}} {
		b := tenancytest.FreshTenant(t)
		use(b)
		plant = tc.plant
		_, err := tenants.Offboard(context.Background(), b)
		plant = ""
		var te *tenancy.Error
		if !errors.As(err, &te) || te.Code != tenancy.CodeTenantErasureIncomplete || te.Module != "pg" || !strings.Contains(te.Detail, tc.family) {
			t.Fatalf("%s planted after the teardown: %v", tc.plant, err)
		}
		if tc.plant == "rows" && te.Route != "tagged" {
			t.Errorf("the error names route %q, not tagged", te.Route)
		}
		if !tenants.Suspended(b) {
			t.Fatal("the tenant must stay suspended")
		}
		if _, err := tenants.Offboard(context.Background(), b); err != nil {
			t.Fatalf("offboard again: %v", err)
		}
	}
}
