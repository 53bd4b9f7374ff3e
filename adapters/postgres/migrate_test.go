package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// migFixture is one test's namespace: a schema prefix, a registry schema,
// and a counter table in public that every migration step inserts into,
// so a step applied twice shows as two rows (a rolled-back step leaves
// none).
type migFixture struct {
	prefix, counter string
	reg             *postgres.Registry
	pool            *pgxpool.Pool
	opts            []postgres.Option // more options of every module
}

func newMigFixture(t *testing.T) migFixture { return newMigFixtureOn(t, testsvc.PostgresURL(t)) }

// newMigFixtureOn is newMigFixture on a pool to dsn, opts added to every
// module.
func newMigFixtureOn(t *testing.T, dsn string, opts ...postgres.Option) migFixture {
	t.Helper()
	u := unique()
	pool, err := pgxpool.New(context.Background(), dsn)
	must0(t, err)
	t.Cleanup(pool.Close)
	reg, err := postgres.NewRegistry(pool, "reg_"+u)
	must0(t, err)
	f := migFixture{prefix: "m" + u + "_", counter: "public.cnt_" + u, reg: reg, pool: pool, opts: opts}
	_, err = pool.Exec(context.Background(), "CREATE TABLE "+f.counter+" (target text NOT NULL, version int NOT NULL)")
	must0(t, err)
	return f
}

// threeSteps is a three-step migration: a column, a table with an index
// (two statements in one file), an index on the new column.
func (f migFixture) threeSteps() fstest.MapFS { return f.steps(true) }

// steps is threeSteps, counted in the fixture's counter table or not (a
// routed tenant's database has no counter table).
func (f migFixture) steps(counted bool) fstest.MapFS {
	count := func(v int) string {
		if !counted {
			return ""
		}
		return fmt.Sprintf("INSERT INTO %s VALUES (current_schema() || '@' || current_database(), %d);\n", f.counter, v)
	}
	return fstest.MapFS{
		"0001_add_total.sql":   {Data: []byte("ALTER TABLE docs ADD COLUMN total numeric NOT NULL DEFAULT 0;\n" + count(1))},
		"0002_audit.sql":       {Data: []byte("CREATE TABLE audit (id bigserial PRIMARY KEY, note text);\nCREATE INDEX audit_note ON audit (note);\n" + count(2))},
		"0003_total_index.sql": {Data: []byte("CREATE INDEX docs_total ON docs (total);\n" + count(3))},
	}
}

// module is a namespace document module on the fixture's prefix.
func (f migFixture) module(extra ...postgres.Option) fx.Option {
	opts := append([]postgres.Option{
		postgres.Use(f.pool), postgres.SchemaPrefix(f.prefix), modules.TenantRegistry(f.reg), modules.AllowTeardown(),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}),
	}, append(f.opts, extra...)...)
	return postgres.Module("pg", opts...)
}

func migTenants(n int) []tenancy.ID {
	out := make([]tenancy.ID, n)
	for i := range out {
		out[i] = tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-a000-%012x", i+1))
	}
	return out
}

// applied counts, per target, the times each step ran.
func (f migFixture) applied(t *testing.T) map[string]map[int]int {
	t.Helper()
	rows, err := f.pool.Query(context.Background(), "SELECT target, version, count(*) FROM "+f.counter+" GROUP BY 1, 2")
	must0(t, err)
	defer rows.Close()
	out := map[string]map[int]int{}
	for rows.Next() {
		var (
			target string
			v, n   int
		)
		must0(t, rows.Scan(&target, &v, &n))
		if out[target] == nil {
			out[target] = map[int]int{}
		}
		out[target][v] = n
	}
	return out
}

// requireOnce fails unless each of want targets ran steps 1..3 exactly
// once, and no other target ran any.
func requireOnce(t *testing.T, got map[string]map[int]int, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d targets ran steps, want %d", len(got), len(want))
	}
	for _, w := range want {
		if s := got[w]; s[1] != 1 || s[2] != 1 || s[3] != 1 || len(s) != 3 {
			t.Errorf("%s ran steps %v, want each of 1..3 once", w, s)
		}
	}
}

func (f migFixture) targets(tenants []tenancy.ID) []string {
	var out []string
	for _, tn := range tenants {
		out = append(out, postgres.SchemaName(f.prefix, tn)+"@"+f.pool.Config().ConnConfig.Database)
	}
	return out
}

func provisionAll(t *testing.T, c *postgres.Client, tenants []tenancy.ID) {
	t.Helper()
	rep, err := c.ProvisionAll(context.Background(), tenants, migrate.Options{Concurrency: 4})
	must0(t, err)
	if rep.Done != len(tenants) || len(rep.Failures) != 0 {
		t.Fatalf("provisioned %d of %d: %v", rep.Done, len(tenants), rep.Failures)
	}
}

// TestMigrateNamespaceTenants: a three-step migration reaches 200 tenant
// schemas at the namespace tier, each step once per schema, in the
// tenant's own schema (nothing lands in public), with no search_path left
// on the pool's connections; the dry run listed exactly that, and a rerun
// changes nothing.
func TestMigrateNamespaceTenants(t *testing.T) {
	f := newMigFixture(t)
	tenants := migTenants(200)
	provisionAll(t, start(t, f.module()), tenants) // today's shape, no migrations yet
	var d *postgres.Documents[item]
	c := start(t, f.module(modules.Migrations(f.threeSteps())), &d)
	ctx := context.Background()

	plan, err := c.MigrateAll(ctx, nil, migrate.Options{DryRun: true, Concurrency: 8})
	must0(t, err)
	if len(plan.Changes) != 600 || plan.Done != 200 || len(f.applied(t)) != 0 {
		t.Fatalf("dry run: %d changes, %d done, applied %v", len(plan.Changes), plan.Done, f.applied(t))
	}
	rep, err := c.MigrateAll(ctx, nil, migrate.Options{Concurrency: 8})
	must0(t, err)
	if rep.Done != 200 || len(rep.Failures) != 0 || len(rep.Changes) != 600 {
		t.Fatalf("migrate: done %d, failures %v, %d changes", rep.Done, rep.Failures, len(rep.Changes))
	}
	t.Logf("200 tenants, 3 steps: %.0f tenants/s", rep.PerSecond())
	requireOnce(t, f.applied(t), f.targets(tenants))

	var inPublic int
	must0(t, f.pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename IN ('audit', 'docs')").Scan(&inPublic))
	var withTotal int
	must0(t, f.pool.QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_schema LIKE $1 AND table_name = 'docs' AND column_name = 'total'", f.prefix+"%").Scan(&withTotal))
	if inPublic != 0 || withTotal != 200 {
		t.Errorf("audit/docs in public: %d; schemas with docs.total: %d", inPublic, withTotal)
	}
	// Every connection the pool holds still has the default search_path.
	conns := make([]*pgxpool.Conn, 0, f.pool.Stat().TotalConns())
	for range f.pool.Stat().TotalConns() {
		cn, err := f.pool.Acquire(ctx)
		must0(t, err)
		conns = append(conns, cn)
		var sp string
		must0(t, cn.QueryRow(ctx, "SHOW search_path").Scan(&sp))
		if sp != `"$user", public` {
			t.Errorf("a pooled connection kept search_path %q", sp)
		}
	}
	for _, cn := range conns {
		cn.Release()
	}

	again, err := c.MigrateAll(ctx, nil, migrate.Options{Concurrency: 8})
	must0(t, err)
	if len(again.Changes) != 0 || again.Done != 200 {
		t.Errorf("rerun changed %d steps (done %d)", len(again.Changes), again.Done)
	}
	all, err := f.reg.List(ctx)
	must0(t, err)
	for _, tn := range all {
		if tn.Versions["pg"] != 3 || tn.State != migrate.Ready {
			t.Fatalf("registry: %+v", tn)
		}
	}
	// The migrated shape is the one the route now serves.
	tctx := tenancy.WithTenant(ctx, tenants[7])
	if _, err := d.Create(tctx, "a", item{Name: "x"}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateRoutedDatabases: on a routed client, each tenant's database
// is its own target: the migration runs once in each.
func TestMigrateRoutedDatabases(t *testing.T) {
	f := newMigFixture(t)
	_, dsns := databases(t, 2, "")
	tenants := migTenants(2)
	creds := map[tenancy.ID]routing.Credentials{tenants[0]: {Endpoint: dsns[0]}, tenants[1]: {Endpoint: dsns[1]}}
	mod := func(extra ...postgres.Option) fx.Option {
		return postgres.Module("pg", append([]postgres.Option{
			postgres.Routed(resolverOf(creds), postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 2, MaxConnsPerClient: 2}}),
			modules.TenantRegistry(f.reg),
			postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs"), Write: naming.Shared("docs")}),
		}, extra...)...)
	}
	provisionAll(t, start(t, mod()), tenants)
	c := built(t, mod(modules.Migrations(f.steps(false)), modules.RequiredVersion(3)))
	rep, err := c.MigrateAll(context.Background(), nil, migrate.Options{})
	must0(t, err)
	if rep.Done != 2 || len(rep.Failures) != 0 || len(rep.Changes) != 6 {
		t.Fatalf("done %d, failures %v, %d changes", rep.Done, rep.Failures, len(rep.Changes))
	}
	for _, dsn := range dsns {
		db, err := pgxpool.New(context.Background(), dsn)
		must0(t, err)
		var steps, cols int
		must0(t, db.QueryRow(context.Background(), "SELECT count(*) FROM public.tenantwire_migrations WHERE module = 'pg'").Scan(&steps))
		must0(t, db.QueryRow(context.Background(), "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'docs' AND column_name = 'total'").Scan(&cols))
		db.Close()
		if steps != 3 || cols != 1 {
			t.Errorf("%s: %d steps recorded, docs.total present %d", dsn, steps, cols)
		}
	}
	again, err := c.MigrateAll(context.Background(), nil, migrate.Options{})
	must0(t, err)
	if again.Done != 2 || len(again.Changes) != 0 {
		t.Errorf("rerun: done %d, %d changes", again.Done, len(again.Changes))
	}
	start(t, mod(modules.Migrations(f.steps(false)), modules.RequiredVersion(3)))
}

// TestMigrateResumesAfterCrash: a run cut off mid-step (its context
// cancelled while a step sleeps) leaves every tenant either fully at its
// old version or fully migrated; the rerun finishes the rest and no step
// ever runs twice.
func TestMigrateResumesAfterCrash(t *testing.T) {
	f := newMigFixture(t)
	tenants := migTenants(40)
	provisionAll(t, start(t, f.module()), tenants)
	steps := f.threeSteps()
	steps["0002_audit.sql"].Data = append([]byte("SELECT pg_sleep(0.02);\n"), steps["0002_audit.sql"].Data...)
	c := start(t, f.module(modules.Migrations(steps)))

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(250 * time.Millisecond)
		cancel()
	}()
	cut, err := c.MigrateAll(ctx, nil, migrate.Options{Concurrency: 2})
	must0(t, err)
	if cut.Err == nil || cut.Done == 0 || cut.Done == len(tenants) {
		t.Fatalf("the cut run was not cut mid-way: done %d of %d, err %v", cut.Done, len(tenants), cut.Err)
	}
	mid := f.applied(t)
	for target, s := range mid {
		if len(s) != 3 {
			t.Errorf("%s is half-migrated after the crash: %v", target, s)
		}
	}
	// A tenant in flight at the cut may have committed and then failed to
	// record its version in the registry: migrated, yet reported failed.
	if len(mid) < cut.Done || len(mid) > cut.Done+2 {
		t.Errorf("%d targets migrated, the report says %d done (2 in flight)", len(mid), cut.Done)
	}
	rest, err := c.MigrateAll(context.Background(), nil, migrate.Options{Concurrency: 2})
	must0(t, err)
	// A COMMIT the cut interrupted can still complete on the server after
	// mid was read: up to the 2 tenants in flight may be migrated without
	// either run counting them. requireOnce below is what proves no step
	// ran twice.
	left := len(tenants) - len(mid)
	if n := len(rest.Changes); rest.Done != len(tenants) || n%3 != 0 || n > 3*left || n < 3*(left-2) {
		t.Errorf("rerun: done %d, %d changes, want whole tenants, %d to %d changes", rest.Done, n, 3*(left-2), 3*left)
	}
	requireOnce(t, f.applied(t), f.targets(tenants))
	all, err := f.reg.List(context.Background())
	must0(t, err)
	for _, tn := range all {
		if tn.Versions["pg"] != 3 {
			t.Errorf("registry after the rerun: %s at %d", tn.ID, tn.Versions["pg"])
		}
	}
}

// TestMigrateConcurrentMigrators: two migrators (two apps) over the same
// tenants at once apply each step once between them.
func TestMigrateConcurrentMigrators(t *testing.T) { concurrentMigrators(t, newMigFixture(t), 60) }

// TestMigrateThroughPgBouncer: the same through PgBouncer in transaction
// pooling mode, one that moves each transaction to another server session
// (server_round_robin): provisioning, the registry and the migrations'
// locks are transaction-level, so each step is applied once all the same.
func TestMigrateThroughPgBouncer(t *testing.T) {
	v := roundRobinPgBouncer(t)
	concurrentMigrators(t, newMigFixtureOn(t, v.url(t)+"&default_query_exec_mode=cache_describe", v.opts...), 30)
}

func concurrentMigrators(t *testing.T, f migFixture, n int) {
	tenants := migTenants(n)
	provisionAll(t, start(t, f.module()), tenants)
	a := start(t, f.module(modules.Migrations(f.threeSteps())))
	b := start(t, f.module(modules.Migrations(f.threeSteps())))
	var (
		wg   sync.WaitGroup
		reps [2]migrate.Report
	)
	for i, c := range []*postgres.Client{a, b} {
		wg.Go(func() {
			var err error
			reps[i], err = c.MigrateAll(context.Background(), tenants, migrate.Options{Concurrency: 4})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, r := range reps {
		if r.Done != len(tenants) || len(r.Failures) != 0 {
			t.Errorf("a migrator: done %d, failures %v", r.Done, r.Failures)
		}
	}
	if n := len(reps[0].Changes) + len(reps[1].Changes); n != 3*len(tenants) {
		t.Errorf("the two migrators applied %d steps between them, want %d", n, 3*len(tenants))
	}
	requireOnce(t, f.applied(t), f.targets(tenants))
}

// TestMigrateFailingStepIsolated: a step that fails for one tenant leaves
// that tenant at its previous version (its earlier steps of the run rolled
// back too), is reported with the tenant and the statement, and every
// other tenant is migrated.
func TestMigrateFailingStepIsolated(t *testing.T) {
	f := newMigFixture(t)
	tenants := migTenants(20)
	provisionAll(t, start(t, f.module()), tenants)
	bad := tenants[5]
	// The bad tenant already has an "audit" table: step 2 fails there.
	_, err := f.pool.Exec(context.Background(), "CREATE TABLE "+postgres.SchemaName(f.prefix, bad)+".audit (x int)")
	must0(t, err)
	c := start(t, f.module(modules.Migrations(f.threeSteps())))
	rep, err := c.MigrateAll(context.Background(), nil, migrate.Options{})
	must0(t, err)
	if rep.Done != 19 || len(rep.Failures) != 1 || rep.Failures[0].Tenant != bad {
		t.Fatalf("done %d, failures %v", rep.Done, rep.Failures)
	}
	var se *migrate.StepError
	if !errors.As(rep.Failures[0].Err, &se) || se.Tenant != bad || se.File != "0002_audit.sql" ||
		se.Statement != "CREATE TABLE audit (id bigserial PRIMARY KEY, note text)" {
		t.Fatalf("failure: %#v", rep.Failures[0].Err)
	}
	got := f.applied(t)
	requireOnce(t, got, f.targets(append(append([]tenancy.ID{}, tenants[:5]...), tenants[6:]...)))
	var cols int
	must0(t, f.pool.QueryRow(context.Background(), "SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'docs' AND column_name = 'total'", postgres.SchemaName(f.prefix, bad)).Scan(&cols))
	if cols != 0 {
		t.Error("step 1 stayed applied on the failing tenant")
	}
	all, err := f.reg.List(context.Background())
	must0(t, err)
	for _, tn := range all {
		if want := map[bool]int64{true: 0, false: 3}[tn.ID == bad]; tn.Versions["pg"] != want {
			t.Errorf("registry: %s at %d, want %d", tn.ID, tn.Versions["pg"], want)
		}
	}
}

// TestMigrateHistoryConflict: an applied file that was edited, removed,
// or a new file older than an applied one is refused with a coded error,
// and nothing of the run is applied.
func TestMigrateHistoryConflict(t *testing.T) {
	f := newMigFixture(t)
	tenants := migTenants(2)
	steps := f.threeSteps()
	partial := fstest.MapFS{"0001_add_total.sql": steps["0001_add_total.sql"], "0003_total_index.sql": steps["0003_total_index.sql"]}
	provisionAll(t, start(t, f.module(modules.Migrations(partial))), tenants)
	edited := f.threeSteps()
	edited["0001_add_total.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE docs ADD COLUMN total bigint;")}
	delete(edited, "0002_audit.sql")
	removed := fstest.MapFS{"0001_add_total.sql": steps["0001_add_total.sql"]}
	for name, set := range map[string]fstest.MapFS{"out of order": f.threeSteps(), "edited": edited, "removed": removed} {
		c := start(t, f.module(modules.Migrations(set)))
		rep, err := c.MigrateAll(context.Background(), nil, migrate.Options{})
		must0(t, err)
		if len(rep.Failures) != 2 {
			t.Fatalf("%s: failures %v", name, rep.Failures)
		}
		var te *tenancy.Error
		if err := rep.Failures[0].Err; !errors.As(err, &te) || te.Code != tenancy.CodeMigrationHistoryConflict || te.Module != "pg" || te.Fix == "" {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s: %v", name, rep.Failures[0].Err)
	}
	if got := f.applied(t); len(got) != 2 || len(got[f.targets(tenants)[0]]) != 2 {
		t.Errorf("applied after the refusals: %v", got)
	}
}

// built builds an app around mod (named "pg") without starting it, as a
// service's migrate command does, and returns the module's client.
func built(t *testing.T, mod fx.Option) *postgres.Client {
	t.Helper()
	var c *postgres.Client
	app := fx.New(fx.NopLogger, mod, named("pg", &c))
	must0(t, app.Err())
	return c
}

// cancelAfter cancels a run once n tenants were recorded ready.
type cancelAfter struct {
	migrate.Registry
	n      atomic.Int32
	at     int32
	cancel func()
}

func (c *cancelAfter) Put(ctx context.Context, tn tenancy.ID, s migrate.State) error {
	err := c.Registry.Put(ctx, tn, s)
	if s == migrate.Ready && c.n.Add(1) == c.at {
		c.cancel()
	}
	return err
}

// TestProvisionAllResumes: a ProvisionAll cut off mid-run leaves its
// unfinished tenants unprovisioned or "provisioning"; the rerun completes
// every tenant, each schema once, all ready in the registry.
func TestProvisionAllResumes(t *testing.T) {
	f := newMigFixture(t)
	tenants := migTenants(30)
	ctx, cancel := context.WithCancel(context.Background())
	reg := &cancelAfter{Registry: f.reg, at: 8, cancel: cancel}
	mod := func(r migrate.Registry) fx.Option {
		return postgres.Module("pg", postgres.Use(f.pool), postgres.SchemaPrefix(f.prefix), modules.TenantRegistry(r),
			modules.Migrations(f.threeSteps()),
			postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.PerTenant("docs"), Write: naming.PerTenant("docs")}))
	}
	cut, err := start(t, mod(reg)).ProvisionAll(ctx, tenants, migrate.Options{Concurrency: 3})
	must0(t, err)
	if cut.Err == nil || cut.Done >= len(tenants) {
		t.Fatalf("the run was not cut: %+v", cut)
	}
	ready, err := migrate.ReadyTenants(context.Background(), f.reg)
	must0(t, err)
	if len(ready) >= len(tenants) || len(ready) < 8 {
		t.Fatalf("%d ready after the cut", len(ready))
	}
	rest, err := start(t, mod(f.reg)).ProvisionAll(context.Background(), tenants, migrate.Options{Concurrency: 3})
	must0(t, err)
	if rest.Done != len(tenants) || len(rest.Failures) != 0 {
		t.Fatalf("rerun: %+v", rest)
	}
	ready, err = migrate.ReadyTenants(context.Background(), f.reg)
	must0(t, err)
	if len(ready) != len(tenants) {
		t.Errorf("%d ready after the rerun", len(ready))
	}
	requireOnce(t, f.applied(t), f.targets(tenants))
}
