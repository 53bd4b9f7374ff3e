package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/document"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
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
	app, c := build(t, postgres.Module("pg", postgres.Connect(testsvc.PostgresURL(t)), postgres.SchemaPrefix(prefix), modules.AllowTeardown(),
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
	// No route confines to the tenant's role, which Provision then never
	// makes: it is no family of this module.
	if checked[" role"] {
		t.Errorf("the verifier checked a role no route of the module makes: %+v", line.Checked)
	}
	for _, want := range []string{"tagged rows write", "idem rows table", "out rows table", " schema"} {
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

// pgKilled is what the kill hook of TestOffboardKilledBetweenModules
// panics with: the process ends there, and nothing after it runs.
type pgKilled struct{ at string }

// TestOffboardKilledBetweenModules: two PostgreSQL modules, "pg" (A's
// schema) and "pi" (A's rows of tagged tables: documents and an outbox),
// with a hook module "ph" between them, which ends the process once,
// either after pg's teardown (before pi's) or in the verifier (pg
// verified, pi not). A new process over the same server and suspension
// store refuses A's calls until the rerun, and the rerun offboards A
// erased: the verifier finds nothing of A on the server, the proof is
// valid, and B's rows and schema are as they were. A module's own
// families are removed in one transaction, so a kill inside a module
// leaves all of them, as a kill before it does.
func TestOffboardKilledBetweenModules(t *testing.T) {
	run := unique()
	url := testsvc.PostgresURL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	reg, err := postgres.NewRegistry(pool, "reg_"+run)
	if err != nil {
		t.Fatal(err)
	}
	listed := func(id tenancy.ID) bool {
		t.Helper()
		all, err := reg.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(all, func(e migrate.Tenant) bool { return e.ID == id })
	}
	var mu sync.Mutex
	suspended := map[tenancy.ID]bool{}
	kill := ""
	point := func(at string) {
		mu.Lock()
		armed := kill == at
		if armed {
			kill = ""
		}
		mu.Unlock()
		if armed {
			panic(pgKilled{at})
		}
	}
	type hook struct{}
	type proc struct {
		tenants *modules.Tenants
		c       *postgres.Client
		ns, tag *postgres.Documents[item]
		out     *postgres.Outbox
	}
	process := func() proc {
		var p proc
		app, c := build(t,
			postgres.Module("pg", postgres.Connect(url), postgres.SchemaPrefix("tw"+run+"_"), modules.AllowTeardown(), modules.TenantRegistry(reg),
				postgres.Document[item]("orders", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")})),
			postgres.Module("pi", postgres.Connect(url), postgres.SchemaPrefix("tw"+run+"i_"), modules.AllowTeardown(), modules.TenantRegistry(reg),
				postgres.Document[item]("tagged", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("kdocs_" + run)}),
				// A second document route, so that neither module's is the
				// app's unnamed one.
				postgres.Document[item]("notes", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("knotes_" + run)}),
				postgres.OutboxRoute("out", postgres.OutboxConfig{TenantAware: true, Table: naming.Shared("kout_" + run)})),
			modules.LifecycleWith(modules.LifecycleConfig{Refresh: 5 * time.Millisecond, Suspended: func(context.Context) ([]tenancy.ID, error) {
				mu.Lock()
				defer mu.Unlock()
				var ids []tenancy.ID
				for id := range suspended {
					ids = append(ids, id)
				}
				return ids, nil
			}}),
			fx.Provide(func() hook { return hook{} }),
			modules.ProvideTenantState(func(hook) modules.TenantState {
				return modules.TenantState{Module: "ph", Backend: "test",
					Offboard: func(context.Context, tenancy.ID) error { point("teardown"); return nil },
					Verify: func(context.Context, tenancy.ID) (modules.Erasure, error) {
						point("verify")
						return modules.Erasure{}, nil
					}}
			}),
			named("orders", &p.ns), named("tagged", &p.tag), named("out", &p.out), fx.Populate(&p.tenants))
		startApp(t, app)
		p.c = c
		return p
	}
	record := modules.OffboardOptions{RecordSuspended: func(_ context.Context, id tenancy.ID) error {
		mu.Lock()
		defer mu.Unlock()
		suspended[id] = true
		return nil
	}}
	counts := func(p proc, id tenancy.ID) [2]int64 {
		t.Helper()
		ctx := tenancy.WithTenant(context.Background(), id)
		var n [2]int64
		for i, r := range []*postgres.Documents[item]{p.ns, p.tag} {
			c, err := r.Count(ctx, document.Query{})
			if err != nil {
				t.Fatal(err)
			}
			n[i] = int64(c)
		}
		return n
	}

	for _, at := range []string{"teardown", "verify"} {
		t.Run(at, func(t *testing.T) {
			first := process()
			a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
			for _, id := range []tenancy.ID{a, b} {
				if _, err := first.tenants.Provision(context.Background(), id); err != nil {
					t.Fatal(err)
				}
				ctx := tenancy.WithTenant(context.Background(), id)
				for i, name := range []string{"x", "y", "z"} {
					for _, r := range []*postgres.Documents[item]{first.ns, first.tag} {
						if _, err := r.Create(ctx, name, item{Name: name, N: i}); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := first.out.Write(ctx, outbox.Message{EventID: "e-" + id.Hex(), Topic: "t", Payload: []byte("p")}); err != nil {
					t.Fatal(err)
				}
			}
			bBefore := counts(first, b)
			mu.Lock()
			kill = at
			mu.Unlock()
			var got any
			func() {
				defer func() { got = recover() }()
				_, err := first.tenants.OffboardWith(context.Background(), a, record)
				t.Fatalf("the offboard ran to its end (%v) past the kill at %q", err, at)
			}()
			if k, ok := got.(pgKilled); !ok || k.at != at {
				t.Fatalf("the offboard stopped with %v, want the kill at %q", got, at)
			}

			// The first module's teardown already forgot A in the registry
			// the modules share (docs/lifecycle.md, After a crash): the
			// tenant to rerun is the one the suspension store lists.
			second := process()
			if _, err := second.tag.Count(tenancy.WithTenant(context.Background(), a), document.Query{}); tenancy.CodeOf(err) != tenancy.CodeTenantSuspended {
				t.Fatalf("the new process serves A before the rerun: %v", err)
			}
			if at == "teardown" {
				// The kill left pi's families: the verifier finds them.
				_, err := second.tenants.VerifyErasure(context.Background(), a)
				if tenancy.CodeOf(err) != tenancy.CodeTenantErasureIncomplete || !strings.Contains(err.Error(), "pi (postgres)") {
					t.Fatalf("the verifier before the rerun: %v, want pi's rows left", err)
				}
			}
			rep, err := second.tenants.OffboardWith(context.Background(), a, record)
			if err != nil {
				t.Fatalf("the rerun: %v", err)
			}
			if p := rep.Proof(a); !p.Erased || p.Check() != nil {
				t.Fatalf("the rerun's proof: %+v", p)
			}
			rep, err = second.tenants.VerifyErasure(context.Background(), a)
			if err != nil {
				t.Fatalf("the verifier after the rerun: %v", err)
			}
			for _, l := range rep {
				if (l.Module == "pg" || l.Module == "pi") && len(l.Checked) == 0 {
					t.Fatalf("module %s checked nothing: %+v", l.Module, l)
				}
			}
			if got := counts(second, b); got != bBefore {
				t.Fatalf("B's rows: %v, were %v", got, bBefore)
			}
			if listed(a) || !listed(b) {
				t.Fatalf("after the rerun the registry lists A %v, B %v", listed(a), listed(b))
			}
		})
	}
}
