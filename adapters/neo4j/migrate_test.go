package neo4j_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// startMigrator starts module with a graph route "g" and returns its
// *migrate.Runner and the route.
func startMigrator(t *testing.T, module string, opts ...neo4j.Option) (*migrate.Runner, *neo4j.Graph) {
	t.Helper()
	app, m, g := newApp(t, module, opts...)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return m, g
}

// threeSteps is a three-step set on label: a uniqueness constraint, a
// range index and a text index. tenantKey puts the tenant property in the
// constraint (a tagged module needs it).
func threeSteps(label string, tenantKey bool) fstest.MapFS {
	props := "n.code"
	if tenantKey {
		props = "(n.tenant_id, n.code)"
	}
	return cypherFiles(
		"0001_code_unique.cypher", fmt.Sprintf("CREATE CONSTRAINT %s_code IF NOT EXISTS FOR (n:%s) REQUIRE %s IS UNIQUE;", label, label, props),
		"0002_by_total.cypher", fmt.Sprintf("// totals\nCREATE INDEX %s_total IF NOT EXISTS FOR (n:%s) ON (n.total)", label, label),
		"0003_by_name.cypher", fmt.Sprintf("CREATE TEXT INDEX %s_name IF NOT EXISTS FOR (n:%s) ON (n.name);\nDROP INDEX %s_gone IF EXISTS", label, label, label),
	)
}

// cleanMigrations removes what a test's migrations left on a server: its
// label's nodes, constraint and indexes, and the module's history.
func cleanMigrations(d direct, module, label string) {
	d.removeLabel(label)
	d.query("DROP CONSTRAINT "+label+"_code IF EXISTS", nil)
	d.query("DROP INDEX "+label+"_total IF EXISTS", nil)
	d.query("DROP INDEX "+label+"_name IF EXISTS", nil)
	d.query("MATCH (h:TenantwireMigration {module: $m}) DELETE h", map[string]any{"m": module})
}

// migrationScope is a migration test's fresh label and module name, with
// a plain driver on each server given; the label's nodes, constraints and
// indexes and the module's history are removed from each when the test
// ends.
func migrationScope(t *testing.T, servers ...testsvc.Neo4jServer) (label, module string, ds []direct) {
	t.Helper()
	label = uniqueLabel(t)
	module = strings.ToLower(label)
	for _, s := range servers {
		ds = append(ds, directTo(t, s))
	}
	t.Cleanup(func() {
		for _, d := range ds {
			cleanMigrations(d, module, label)
		}
	})
	return label, module, ds
}

// history is the module's recorded steps on a server: "target/version/state".
func (d direct) history(module string) []string {
	d.t.Helper()
	var out []string
	for _, r := range d.query("MATCH (h:TenantwireMigration {module: $m}) RETURN h.target, h.version, h.state ORDER BY h.target, h.version", map[string]any{"m": module}) {
		out = append(out, fmt.Sprintf("%v/%v/%v", r.Values[0], r.Values[1], r.Values[2]))
	}
	return out
}

// schema is the names of label's constraints and online indexes.
func (d direct) schema(label string) []string {
	d.t.Helper()
	var out []string
	for _, r := range d.query("SHOW CONSTRAINTS YIELD name WHERE name STARTS WITH $l RETURN name ORDER BY name", map[string]any{"l": label}) {
		out = append(out, "constraint "+r.Values[0].(string))
	}
	for _, r := range d.query("SHOW INDEXES YIELD name, state, owningConstraint WHERE name STARTS WITH $l AND owningConstraint IS NULL RETURN name, state ORDER BY name", map[string]any{"l": label}) {
		out = append(out, fmt.Sprintf("index %s %s", r.Values[0], r.Values[1]))
	}
	return out
}

func historyOf(tenant tenancy.ID, versions ...int) []string {
	var out []string
	for _, v := range versions {
		out = append(out, fmt.Sprintf("%s/%d/applied", tenant.Hex(), v))
	}
	return out
}

// Dedicated: tenant A's database is the first server, B's the second. A
// dry run changes nothing; two migrators at once apply each step once per
// tenant between them; the schema is on each server and enforced; a
// rerun changes nothing; an edited applied file is refused.
func TestMigrateRoutedTwoServers(t *testing.T) {
	s1, s2 := testsvc.Neo4j(t), testsvc.Neo4jSecond(t)
	label, module, ds := migrationScope(t, s1, s2)
	d1, d2 := ds[0], ds[1]
	routed := neo4j.Routed(aOnFirstBOnSecond(s1, s2), routing.Limits{})
	ctx := context.Background()
	a, b := tenancytest.TenantA, tenancytest.TenantB
	reg := migrate.NewMemoryRegistry()
	for _, id := range []tenancy.ID{a, b} {
		if err := reg.Put(ctx, id, migrate.Ready); err != nil {
			t.Fatal(err)
		}
	}
	m, g := startMigrator(t, module, routed, neo4j.GraphRoute("g", neo4j.RouteConfig{}), modules.Migrations(threeSteps(label, false)), modules.TenantRegistry(reg))

	plan, err := m.MigrateAll(ctx, nil, migrate.Options{DryRun: true})
	if err != nil || len(plan.Changes) != 6 || len(plan.Failures) != 0 {
		t.Fatalf("dry run: %d changes, %+v, %v", len(plan.Changes), plan.Failures, err)
	}
	if h, s := d1.history(module), d1.schema(label); len(h)+len(s) != 0 {
		t.Fatalf("the dry run changed the first server: %v %v", h, s)
	}

	var wg sync.WaitGroup
	var reps [2]migrate.Report
	for i := range reps {
		wg.Go(func() { reps[i], _ = m.MigrateAll(ctx, nil, migrate.Options{Concurrency: 2}) })
	}
	wg.Wait()
	applied := map[string]int{}
	for _, r := range reps {
		if len(r.Failures) != 0 {
			t.Fatalf("concurrent migrators: %+v", r.Failures)
		}
		for _, c := range r.Changes {
			applied[fmt.Sprintf("%s/%d", c.Tenant, c.Version)]++
		}
	}
	if len(applied) != 6 {
		t.Fatalf("steps applied between the two migrators: %v, want each of 3 steps for 2 tenants", applied)
	}
	for k, n := range applied {
		if n != 1 {
			t.Fatalf("step %s applied %d times", k, n)
		}
	}
	wantSchema := fmt.Sprint([]string{"constraint " + label + "_code", "index " + label + "_name ONLINE", "index " + label + "_total ONLINE"})
	for _, c := range []struct {
		d      direct
		tenant tenancy.ID
	}{{d1, a}, {d2, b}} {
		if h := fmt.Sprint(c.d.history(module)); h != fmt.Sprint(historyOf(c.tenant, 1, 2, 3)) {
			t.Fatalf("history on %s's server: %s", c.tenant, h)
		}
		if s := fmt.Sprint(c.d.schema(label)); s != wantSchema {
			t.Fatalf("schema on %s's server: %s, want %s", c.tenant, s, wantSchema)
		}
	}
	all, _ := reg.List(ctx)
	for _, tn := range all {
		if tn.Versions[module] != 3 {
			t.Fatalf("registry: tenant %s at %d, want 3", tn.ID, tn.Versions[module])
		}
	}

	// The constraint holds within a tenant's own database.
	ctxA := tenancy.WithTenant(ctx, a)
	if _, err := g.CreateNode(ctxA, []string{label}, map[string]any{"code": "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateNode(ctxA, []string{label}, map[string]any{"code": "x"}); err == nil {
		t.Fatal("a second node with the same code was created under the uniqueness constraint")
	}

	// Fail closed: no tenant is no target (never a shared one), and a
	// tenant without credentials reaches no server.
	if _, err := m.Migrate(ctx, tenancy.ID{}); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("the zero tenant on a routed module: %v, want tenant_unbound", err)
	}
	stranger := tenancy.MustParseID("00000000-0000-4000-8000-0000000000cc")
	if ch, err := m.Migrate(ctx, stranger); err == nil || len(ch) != 0 {
		t.Fatalf("a tenant without credentials: %v, %v", ch, err)
	}

	rerun, err := m.MigrateAll(ctx, nil, migrate.Options{})
	if err != nil || len(rerun.Changes) != 0 || rerun.Done != 2 {
		t.Fatalf("rerun: %+v, %v", rerun, err)
	}

	edited := threeSteps(label, false)
	edited["0002_by_total.cypher"] = &fstest.MapFile{Data: []byte(fmt.Sprintf("CREATE INDEX %s_total IF NOT EXISTS FOR (n:%s) ON (n.total, n.code)", label, label))}
	m2, _ := startMigrator(t, module, routed, neo4j.GraphRoute("g", neo4j.RouteConfig{}), modules.Migrations(edited))
	_, err = m2.Migrate(ctx, b)
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeMigrationHistoryConflict || !strings.Contains(te.Detail, "0002_by_total.cypher was edited") || !strings.Contains(te.Detail, b.String()) {
		t.Fatalf("edited applied file: %v", err)
	}
}

// Tagged: tenants share the database, so the set runs on it once, and a
// uniqueness constraint that leads with the tenant property is unique per
// tenant: A and B may both hold code "x", A twice may not.
func TestMigrateTaggedShared(t *testing.T) {
	s := testsvc.Neo4j(t)
	label, module, ds := migrationScope(t, s)
	d := ds[0]
	m, g := startMigrator(t, module, connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true}), modules.Migrations(threeSteps(label, true)))
	ctx := context.Background()
	rep, err := m.MigrateAll(ctx, []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB}, migrate.Options{})
	if err != nil || rep.Total != 1 || len(rep.Changes) != 3 || len(rep.Failures) != 0 {
		t.Fatalf("shared migration: %+v, %v", rep, err)
	}
	for _, c := range rep.Changes {
		if !c.Tenant.IsZero() {
			t.Fatalf("a tagged module's step ran for tenant %s, want the shared database once", c.Tenant)
		}
	}
	if h := fmt.Sprint(d.history(module)); h != "[shared/1/applied shared/2/applied shared/3/applied]" {
		t.Fatalf("history: %s", h)
	}
	ctxA, ctxB := tenancy.WithTenant(ctx, tenancytest.TenantA), tenancy.WithTenant(ctx, tenancytest.TenantB)
	for _, c := range []context.Context{ctxA, ctxB} {
		if _, err := g.CreateNode(c, []string{label}, map[string]any{"code": "x"}); err != nil {
			t.Fatalf("the constraint crossed tenants: %v", err)
		}
	}
	if _, err := g.CreateNode(ctxA, []string{label}, map[string]any{"code": "x"}); err == nil {
		t.Fatal("tenant A created a second node with code x under the per-tenant uniqueness constraint")
	}
	// A module whose only target is shared migrates it whatever the
	// tenant (as Provision does for every tenant): here, nothing is left.
	if ch, err := m.Migrate(ctx, tenancytest.TenantA); err != nil || len(ch) != 0 {
		t.Fatalf("Migrate for a tenant of a module with only the shared database: %v, %v", ch, err)
	}
	if rep, err := m.MigrateAll(ctx, nil, migrate.Options{}); err != nil || len(rep.Changes) != 0 || rep.Done != 1 {
		t.Fatalf("rerun: %+v, %v", rep, err)
	}
}

// A step the server refuses for one tenant (B's database holds duplicate
// codes, so the uniqueness constraint cannot be created) fails that
// tenant alone, naming it and the statement, with nothing recorded; A
// goes on. Once B's data is fixed, a rerun applies B's steps only.
func TestMigrateFailureIsolatedToTenant(t *testing.T) {
	s1, s2 := testsvc.Neo4j(t), testsvc.Neo4jSecond(t)
	label, module, ds := migrationScope(t, s1, s2)
	d1, d2 := ds[0], ds[1]
	d2.query("CREATE (:"+label+" {code: 'dup'}), (:"+label+" {code: 'dup'})", nil)
	reg := migrate.NewMemoryRegistry()
	m, _ := startMigrator(t, module, neo4j.Routed(aOnFirstBOnSecond(s1, s2), routing.Limits{}), neo4j.GraphRoute("g", neo4j.RouteConfig{}), modules.Migrations(threeSteps(label, false)), modules.TenantRegistry(reg))
	ctx := context.Background()
	a, b := tenancytest.TenantA, tenancytest.TenantB
	rep, err := m.MigrateAll(ctx, []tenancy.ID{a, b}, migrate.Options{})
	if err != nil || rep.Done != 1 || len(rep.Failures) != 1 || rep.Failures[0].Tenant != b {
		t.Fatalf("report: %+v, %v", rep, err)
	}
	var se *migrate.StepError
	if !errors.As(rep.Failures[0].Err, &se) || se.Tenant != b || se.File != "0001_code_unique.cypher" || !strings.Contains(se.Statement, "REQUIRE n.code IS UNIQUE") {
		t.Fatalf("failure: %v", rep.Failures[0].Err)
	}
	if h := d2.history(module); len(h) != 0 {
		t.Fatalf("B's failed step left history: %v", h)
	}
	if h := fmt.Sprint(d1.history(module)); h != fmt.Sprint(historyOf(a, 1, 2, 3)) {
		t.Fatalf("A's history: %s", h)
	}
	d2.query("MATCH (n:"+label+") DETACH DELETE n", nil)
	rep, err = m.MigrateAll(ctx, []tenancy.ID{a, b}, migrate.Options{})
	if err != nil || rep.Done != 2 || len(rep.Changes) != 3 {
		t.Fatalf("rerun: %+v, %v", rep, err)
	}
	for _, c := range rep.Changes {
		if c.Tenant != b {
			t.Fatalf("the rerun applied %s %d again to %s", c.Name, c.Version, c.Tenant)
		}
	}
}

// A claim left by a migrator that crashed mid-step is taken over once
// stale; a fresh one makes the other migrator wait, then report
// ErrStepClaimed without running the step.
func TestMigrateClaims(t *testing.T) {
	s1, s2 := testsvc.Neo4j(t), testsvc.Neo4jSecond(t)
	label, module, ds := migrationScope(t, s1)
	d1 := ds[0]
	m, _ := startMigrator(t, module, neo4j.Routed(aOnFirstBOnSecond(s1, s2), routing.Limits{}), neo4j.GraphRoute("g", neo4j.RouteConfig{}), modules.Migrations(threeSteps(label, false)))
	ctx := context.Background()
	a := tenancytest.TenantA
	// The history constraint exists once any migration ran on the server.
	d1.query("CREATE CONSTRAINT tenantwire_migration_key IF NOT EXISTS FOR (h:TenantwireMigration) REQUIRE (h.module, h.target, h.version) IS UNIQUE", nil)
	claim := "CREATE (:TenantwireMigration {module: $m, target: $t, version: 1, name: 'code_unique', checksum: 'x', state: 'applying', at: datetime() - duration($age)})"
	d1.query(claim, map[string]any{"m": module, "t": a.Hex(), "age": "PT5S"})
	defer neo4j.SetClaimWait(300 * time.Millisecond)()
	if _, err := m.Migrate(ctx, a); !errors.Is(err, migrate.ErrStepClaimed) {
		t.Fatalf("a fresh claim: %v, want ErrStepClaimed", err)
	}
	if s := d1.schema(label); len(s) != 0 {
		t.Fatalf("the step ran under another migrator's claim: %v", s)
	}
	d1.query("MATCH (h:TenantwireMigration {module: $m}) SET h.at = datetime() - duration('PT11M')", map[string]any{"m": module})
	// Two migrators find the stale claim at once: one takes it over, the
	// other waits for it (and may give up with ErrStepClaimed).
	var wg sync.WaitGroup
	var chs [2][]migrate.Change
	var errs [2]error
	for i := range chs {
		wg.Go(func() { chs[i], errs[i] = m.Migrate(ctx, a) })
	}
	wg.Wait()
	first := 0
	for i := range chs {
		if errs[i] != nil && !errors.Is(errs[i], migrate.ErrStepClaimed) {
			t.Fatalf("taking over a stale claim: %v", errs[i])
		}
		for _, c := range chs[i] {
			if c.Version == 1 {
				first++
			}
		}
	}
	if first != 1 {
		t.Fatalf("the stale claim's step ran %d times between two migrators, want once", first)
	}
	if ch, err := m.Migrate(ctx, a); err != nil {
		t.Fatalf("completing after the takeover: %v, %v", ch, err)
	}
	if h := fmt.Sprint(d1.history(module)); h != fmt.Sprint(historyOf(a, 1, 2, 3)) {
		t.Fatalf("history: %s", h)
	}
}

// Namespace (a database per tenant on one server) needs Enterprise
// Edition to create the databases; on Community the refusal is checked to
// be ErrEnterpriseRequired and the test skips, saying so.
func TestMigrateNamespace(t *testing.T) {
	s := testsvc.Neo4j(t)
	label := uniqueLabel(t)
	module := strings.ToLower(label)
	m, _ := startMigrator(t, module, connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.PerTenant("twmig")}), modules.Migrations(threeSteps(label, false)))
	ctx := context.Background()
	if directTo(t, s).edition() == "community" {
		if err := m.Provision(ctx, tenancytest.TenantA); !errors.Is(err, neo4j.ErrEnterpriseRequired) {
			t.Fatalf("Community Edition refused CREATE DATABASE with %v, want ErrEnterpriseRequired", err)
		}
		t.Skip("SKIPPED: per-tenant databases (namespace) need Neo4j Enterprise Edition; this server is Community " +
			"(its refusal was checked to be ErrEnterpriseRequired). The per-tenant target is exercised on routed drivers (TestMigrateRoutedTwoServers)")
	}
	// Provisioning creates each database and migrates it; MigrateAll then
	// finds nothing pending.
	rep, err := m.ProvisionAll(ctx, []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB}, migrate.Options{})
	if err != nil || rep.Done != 2 || len(rep.Failures) != 0 {
		t.Fatalf("provisioning: %+v, %v", rep, err)
	}
	rep, err = m.MigrateAll(ctx, []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB}, migrate.Options{})
	if err != nil || len(rep.Changes) != 0 || len(rep.Failures) != 0 {
		t.Fatalf("namespace: %+v, %v", rep, err)
	}
}

// A step added below the newest applied version is refused with
// migration_history_conflict for the whole target, and nothing runs.
func TestMigrateOutOfOrderRefused(t *testing.T) {
	s := testsvc.Neo4j(t)
	label, module, ds := migrationScope(t, s)
	d := ds[0]
	all := threeSteps(label, true)
	gap := fstest.MapFS{"0001_code_unique.cypher": all["0001_code_unique.cypher"], "0003_by_name.cypher": all["0003_by_name.cypher"]}
	ctx := context.Background()
	m, _ := startMigrator(t, module, connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true}), modules.Migrations(gap))
	if ch, err := m.Migrate(ctx, tenancy.ID{}); err != nil || len(ch) != 2 {
		t.Fatalf("first set: %v, %v", ch, err)
	}
	m2, _ := startMigrator(t, module, connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true}), modules.Migrations(all))
	_, err := m2.Migrate(ctx, tenancy.ID{})
	var te *tenancy.Error
	if !errors.As(err, &te) || te.Code != tenancy.CodeMigrationHistoryConflict || !strings.Contains(te.Detail, "0002_by_total.cypher is not applied, but version 3") {
		t.Fatalf("out of order: %v", err)
	}
	if sc := fmt.Sprint(d.schema(label)); strings.Contains(sc, label+"_total") {
		t.Fatalf("the out-of-order step ran: %s", sc)
	}
}
