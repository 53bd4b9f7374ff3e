package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
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

// ownerURL makes a login role that is no superuser, owns what it
// provisions and may create roles (a managed server's provisioning
// user), and returns the test server's URL logged in as it.
func ownerURL(t *testing.T, admin *pgx.Conn, name string) string {
	t.Helper()
	ctx := context.Background()
	for _, s := range []string{
		"CREATE ROLE " + name + " LOGIN CREATEROLE PASSWORD 'owner-pw'",
		"GRANT CREATE ON SCHEMA public TO " + name,
		"GRANT CREATE ON DATABASE " + pgx.Identifier{admin.Config().Database}.Sanitize() + " TO " + name,
	} {
		if _, err := admin.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(name, "owner-pw")
	return u.String()
}

func adminConn(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestRowSecurityKeepsAForgottenPredicateToTheTenant: a tagged route's
// statements with their tenant predicate lost read, update and delete
// every tenant's rows; with RowSecurity the server keeps each call to the
// tenant set for it. Both run as a non-superuser owner, as on a managed
// server (a superuser is past every policy).
func TestRowSecurityKeepsAForgottenPredicateToTheTenant(t *testing.T) {
	admin := adminConn(t)
	for _, guarded := range []bool{false, true} {
		run := unique()
		dsn := ownerURL(t, admin, "owner_"+run)
		opts := []postgres.Option{postgres.Connect(dsn), postgres.SchemaPrefix("t" + run + "_"), modules.RequiredIsolation(tenancy.Tagged),
			postgres.Document[item]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("rls_" + run), History: naming.Shared("rlsh_" + run)})}
		if guarded {
			opts = append(opts, postgres.RowSecurity())
		}
		var d *postgres.Documents[item]
		c := start(t, postgres.Module("pg", opts...), &d)
		provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
		a := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
		b := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
		for ctx, n := range map[context.Context]int{a: 1, b: 2} {
			if _, err := d.Create(ctx, "x", item{Name: "mine", N: n}); err != nil {
				t.Fatal(err)
			}
		}
		postgres.ForgetTenantPredicate(d)

		count, err := d.Count(a, document.Query{})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := d.List(a, document.Query{})
		if err != nil {
			t.Fatal(err)
		}
		_, uerr := d.Update(a, "x", item{Name: "changed", N: 1}, 1)
		derr := d.Delete(a, "x")
		var bRows int
		if err := admin.QueryRow(context.Background(), "SELECT count(*) FROM rls_"+run+" WHERE tenant_id = $1 AND value->>'name' = 'mine'",
			tenancytest.TenantB.String()).Scan(&bRows); err != nil {
			t.Fatal(err)
		}
		if !guarded {
			// The control: without row security the lost predicate leaks,
			// so the guarded run below shows the policy, not the test.
			if count != 2 || len(recs) != 2 || bRows != 0 {
				t.Fatalf("unguarded: count %d, listed %d, B's intact rows %d (update %v, delete %v): the lost predicate did not leak", count, len(recs), bRows, uerr, derr)
			}
			continue
		}
		if count != 1 || len(recs) != 1 || recs[0].Value.N != 1 {
			t.Errorf("guarded: A counted %d and listed %v, want its own row only", count, recs)
		}
		if uerr != nil || derr != nil {
			t.Errorf("guarded: A's update %v, delete %v", uerr, derr)
		}
		if bRows != 1 {
			t.Errorf("guarded: B has %d intact rows after A's update and delete, want 1", bRows)
		}
		if r, err := d.Get(b, "x"); err != nil || r.Value.N != 2 {
			t.Errorf("guarded: B reads %v, %v", r, err)
		}
		if _, err := d.Get(a, "x"); !errors.Is(err, document.ErrNotFound) {
			t.Errorf("guarded: A's deleted row reads %v", err)
		}
		// The routes keep their promise with the predicate in place too,
		// and offboarding (as the owner) still finds every row of A.
		tenancytest.Boundary(t, docProbe(t, freshGuarded(t, dsn, run)))
	}
}

// freshGuarded is a guarded module over new tables of run, its statements
// whole, with both probe tenants provisioned.
func freshGuarded(t *testing.T, dsn, run string) *postgres.Documents[item] {
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", postgres.Connect(dsn), postgres.SchemaPrefix("t"+run+"_"), postgres.RowSecurity(),
		postgres.Document[item]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("rlsp_" + run)})), &d)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	return d
}

// TestRowSecurityInAUnitOfWork: inside InTx a guarded call sets its tenant
// and role for its own statement only; the unit's next call, on a route
// row security does not guard, runs as the module's user again.
func TestRowSecurityInAUnitOfWork(t *testing.T) {
	admin := adminConn(t)
	run := unique()
	dsn := ownerURL(t, admin, "owner_"+run)
	var d *postgres.Documents[item]
	var k *postgres.Counter
	c := start(t, postgres.Module("pg", postgres.Connect(dsn), postgres.SchemaPrefix("t"+run+"_"), postgres.RowSecurity(),
		postgres.Document[item]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("rls_" + run)}),
		postgres.CounterRoute("hits", postgres.CounterConfig{Table: naming.PerTenant("hits")})), &d, named("hits", &k))
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	b := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	if _, err := d.Create(b, "x", item{N: 2}); err != nil {
		t.Fatal(err)
	}
	postgres.ForgetTenantPredicate(d)
	a := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	var counted int
	err := c.InTx(a, func(ctx context.Context) error {
		if _, err := d.Create(ctx, "y", item{N: 1}); err != nil {
			return err
		}
		n, err := d.Count(ctx, document.Query{})
		counted = n
		if err != nil {
			return err
		}
		// The per-tenant counter's table is not the row-security role's:
		// this fails if the role outlived the guarded statement.
		_, err = k.Add(ctx, "c", 1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if counted != 1 {
		t.Errorf("in the unit A counted %d rows, want its own 1", counted)
	}
	if n, err := k.Get(a, "c"); err != nil || n != 1 {
		t.Errorf("the unit's counter: %d, %v", n, err)
	}
}

// TestRowSecurityRefusesAnOwnerUnderItsPolicies: when the server says
// the module's own user is under a guarded table's row security (here
// FORCE ROW LEVEL SECURITY), provisioning is refused: the owner's
// teardown and erasure check would see no row.
func TestRowSecurityRefusesAnOwnerUnderItsPolicies(t *testing.T) {
	admin := adminConn(t)
	run := unique()
	dsn := ownerURL(t, admin, "owner_"+run)
	mod := func() fx.Option {
		return postgres.Module("pg", postgres.Connect(dsn), postgres.SchemaPrefix("t"+run+"_"), postgres.RowSecurity(), modules.AllowTeardown(),
			postgres.Document[item]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("rls_" + run)}))
	}
	provision(t, start(t, mod()), tenancytest.TenantA)
	if _, err := admin.Exec(context.Background(), "ALTER TABLE rls_"+run+" FORCE ROW LEVEL SECURITY"); err != nil {
		t.Fatal(err)
	}
	err := start(t, mod()).Provision(context.Background(), tenancytest.TenantB)
	_ = tenancytest.RequireCode(t, err, postgres.CodeRowSecurityOwner, "postgres", "pg", "orders", "rls_"+run)
	// A replica that provisions nothing asks before its teardown, which
	// would otherwise delete none of A's rows and report them gone.
	err = start(t, mod()).Teardown(context.Background(), tenancytest.TenantA)
	_ = tenancytest.RequireCode(t, err, postgres.CodeRowSecurityOwner, "postgres", "pg", "orders", "rls_"+run)
}

// TestRowSecurityWiring: RowSecurity where it guards nothing is refused
// at fx.New.
func TestRowSecurityWiring(t *testing.T) {
	url := testsvc.PostgresURL(t)
	for name, mod := range map[string]fx.Option{
		"no tagged route": postgres.Module("pg", postgres.Connect(url), postgres.RowSecurity(),
			postgres.Document[item]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.PerTenant("orders")})),
		"routed": postgres.Module("pg", postgres.Routed(func(context.Context, tenancy.ID) (routing.Credentials, error) { return routing.Credentials{}, nil }, postgres.RoutedConfig{}), postgres.RowSecurity(),
			postgres.Document[item]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("orders")})),
	} {
		err := fx.New(fx.NopLogger, mod).Err()
		var e *tenancy.Error
		if !errors.As(err, &e) || e.Code != tenancy.CodeWiringInvalid || e.Module != "pg" || e.Fix == "" ||
			!strings.Contains(e.Detail, "RowSecurity") {
			t.Errorf("%s: %v, want wiring_invalid naming RowSecurity", name, err)
		}
	}
}

// TestRowSecurityBehindPgBouncer: in transaction pooling the tenant and
// role a call sets end with its transaction, so the server session the
// pooler hands the next call carries neither: a call that lost its
// predicate still keeps to its tenant, and the module's own user (here a
// superuser, past every policy) reads every row after it.
func TestRowSecurityBehindPgBouncer(t *testing.T) {
	run := unique()
	var d *postgres.Documents[item]
	c := start(t, postgres.Module("pg", append(throughPgBouncer.dsn(t), postgres.SchemaPrefix("t"+run+"_"), postgres.RowSecurity(),
		postgres.Document[item]("orders", postgres.DocumentConfig{TenantAware: true, Read: naming.Shared("rls_" + run)}))...), &d)
	provision(t, c, tenancytest.TenantA, tenancytest.TenantB)
	a := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	b := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	for ctx, n := range map[context.Context]int{a: 1, b: 2} {
		if _, err := d.Create(ctx, "x", item{N: n}); err != nil {
			t.Fatal(err)
		}
	}
	postgres.ForgetTenantPredicate(d)
	for range 20 { // over the pooler's few server sessions, several times each
		for ctx, want := range map[context.Context]int{a: 1, b: 2} {
			recs, err := d.List(ctx, document.Query{})
			if err != nil || len(recs) != 1 || recs[0].Value.N != want {
				t.Fatalf("a call that lost its predicate, behind the pooler: %v %v, want its own row only", recs, err)
			}
		}
	}
	pool, release, err := c.Pool(a)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for range 10 {
		var n int
		if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM rls_"+run).Scan(&n); err != nil || n != 2 {
			t.Fatalf("the module's user after guarded calls reads %d rows (%v): a session kept a guarded call's role", n, err)
		}
	}
}
