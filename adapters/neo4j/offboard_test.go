package neo4j_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

func offboardApp(t *testing.T, opts ...neo4j.Option) (*modules.Tenants, *neo4j.Graph) {
	t.Helper()
	var r struct {
		fx.In
		Tenants *modules.Tenants
		Graph   *neo4j.Graph `name:"g"`
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(), neo4j.Module("graph", opts...), fx.Populate(&r))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return r.Tenants, r.Graph
}

// TestOffboardDeletesTheTenantsGraph: on a tagged route, offboarding
// deletes every node and relationship carrying the tenant (more than one
// batch), read raw on the server afterwards; the other tenant's graph and
// a framework node carrying the tenant property stay. A rerun succeeds.
func TestOffboardDeletesTheTenantsGraph(t *testing.T) {
	s := testsvc.Neo4j(t)
	d := directTo(t, s)
	label := uniqueLabel(t)
	framework := "Tenantwire" + label
	t.Cleanup(func() { d.removeLabel(label); d.removeLabel(framework) })
	tenants, g := offboardApp(t, connect(s), modules.AllowTeardown(), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true}))
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	ca, cb := tenancy.WithTenant(context.Background(), a), tenancy.WithTenant(context.Background(), b)
	d.query("UNWIND range(1, 1500) AS i CREATE (:`"+label+"` {i: i, tenant_id: $a})", map[string]any{"a": a.String()})
	for _, ctx := range []context.Context{ca, cb} {
		n1, err := g.CreateNode(ctx, []string{label}, map[string]any{"name": "x"})
		if err != nil {
			t.Fatal(err)
		}
		n2, err := g.CreateNode(ctx, []string{label}, map[string]any{"name": "y"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.CreateRelationship(ctx, n1.ID, n2.ID, "KNOWS", nil); err != nil {
			t.Fatal(err)
		}
	}
	d.query("CREATE (:`"+framework+"` {tenant_id: $a})", map[string]any{"a": a.String()})
	for range 2 {
		rep, err := tenants.Offboard(context.Background(), a)
		if err != nil || len(rep) != 1 || rep[0].Backend != "neo4j" {
			t.Fatalf("offboard: %+v %v", rep, err)
		}
		if len(rep[0].Checked) != 1 || rep[0].Checked[0].Name != "tagged nodes" || rep[0].Checked[0].Route != "g" || len(rep[0].Left) != 0 {
			t.Fatalf("the verifier's report: checked %+v, left %+v", rep[0].Checked, rep[0].Left)
		}
	}
	count := func(cypher string, id tenancy.ID) int64 {
		return d.query(cypher, map[string]any{"t": id.String()})[0].Values[0].(int64)
	}
	nodes := "MATCH (n:`" + label + "`) WHERE n.tenant_id = $t RETURN count(n)"
	rels := "MATCH (:`" + label + "`)-[x]->() WHERE x.tenant_id = $t RETURN count(x)"
	if n, r := count(nodes, a), count(rels, a); n != 0 || r != 0 {
		t.Errorf("A's graph after offboarding: %d nodes, %d relationships", n, r)
	}
	if n, r := count(nodes, b), count(rels, b); n != 2 || r != 1 {
		t.Errorf("B's graph after offboarding A: %d nodes, %d relationships, want 2 and 1", n, r)
	}
	if n := d.count(framework); n != 1 {
		t.Errorf("framework nodes after offboarding: %d, want 1", n)
	}
}

// TestNeo4jOffboardNeedsAllowTeardown: without AllowTeardown offboarding
// refuses and the graph stays.
func TestNeo4jOffboardNeedsAllowTeardown(t *testing.T) {
	s := testsvc.Neo4j(t)
	d := directTo(t, s)
	label := uniqueLabel(t)
	t.Cleanup(func() { d.removeLabel(label) })
	tenants, g := offboardApp(t, connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true}))
	a := tenancytest.FreshTenant(t)
	if _, err := g.CreateNode(tenancy.WithTenant(context.Background(), a), []string{label}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tenants.Offboard(context.Background(), a); !errors.Is(err, migrate.ErrTeardownDisabled) {
		t.Fatalf("offboard without AllowTeardown: %v", err)
	}
	if n := d.count(label); n != 1 {
		t.Errorf("nodes after a refused offboarding: %d, want 1", n)
	}
}

// TestOffboardDropsTheTenantsDatabase: on a per-tenant database route,
// offboarding drops the tenant's database (Enterprise) and leaves the
// other tenant's; on Community, which has no per-tenant databases, the
// test checks that offboarding a tenant whose database does not exist
// succeeds, then skips saying so.
func TestOffboardDropsTheTenantsDatabase(t *testing.T) {
	s := testsvc.Neo4j(t)
	d := directTo(t, s)
	prefix := "twob" + tenancytest.FreshTenant(t).Hex()[:6]
	tenants, _ := offboardApp(t, connect(s), modules.AllowTeardown(), neo4j.GraphRoute("g", neo4j.RouteConfig{Database: naming.PerTenant(prefix)}))
	a, b := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	if d.edition() == "community" {
		if _, err := tenants.Offboard(context.Background(), a); err != nil {
			t.Fatalf("offboard on Community: %v", err)
		}
		t.Skip("SKIPPED: dropping a per-tenant database needs Neo4j Enterprise Edition and this server is Community; offboarding a tenant without a database was checked to succeed")
	}
	for _, id := range []tenancy.ID{a, b} {
		if _, err := tenants.Provision(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = tenants.Offboard(context.Background(), b) })
	dbs := func() map[string]bool {
		out := map[string]bool{}
		for _, r := range d.query("SHOW DATABASES YIELD name WHERE name STARTS WITH $p RETURN name", map[string]any{"p": prefix}) {
			out[r.Values[0].(string)] = true
		}
		return out
	}
	if _, err := tenants.Offboard(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	got := dbs()
	if got[prefix+"-"+a.Hex()] || !got[prefix+"-"+b.Hex()] {
		t.Errorf("databases after offboarding A: %v", got)
	}
}

// TestOffboardAllDeletesEveryTenantsGraph: OffboardAll of 30 tenants on a
// tagged route (one batched delete for them all) removes every node and
// relationship of theirs, 1,500 nodes of one of them included (more than a
// delete batch), read raw afterwards; another tenant's graph and a
// framework node carrying an offboarded tenant's id stay. A rerun succeeds.
func TestOffboardAllDeletesEveryTenantsGraph(t *testing.T) {
	s := testsvc.Neo4j(t)
	d := directTo(t, s)
	label := uniqueLabel(t)
	framework := "Tenantwire" + label
	t.Cleanup(func() { d.removeLabel(label); d.removeLabel(framework) })
	tenants, g := offboardApp(t, connect(s), modules.AllowTeardown(), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true}))
	ids := make([]tenancy.ID, 30)
	var names []string
	for i := range ids {
		ids[i] = tenancytest.FreshTenant(t)
		names = append(names, ids[i].String())
	}
	keep := tenancytest.FreshTenant(t)
	d.query("UNWIND range(1, 1500) AS i CREATE (:`"+label+"` {i: i, tenant_id: $a})", map[string]any{"a": names[0]})
	for _, id := range append(slices.Clone(ids), keep) {
		ctx := tenancy.WithTenant(context.Background(), id)
		n1, err := g.CreateNode(ctx, []string{label}, nil)
		if err != nil {
			t.Fatal(err)
		}
		n2, err := g.CreateNode(ctx, []string{label}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.CreateRelationship(ctx, n1.ID, n2.ID, "KNOWS", nil); err != nil {
			t.Fatal(err)
		}
	}
	d.query("CREATE (:`"+framework+"` {tenant_id: $a})", map[string]any{"a": names[0]})
	for range 2 {
		if rep := tenants.OffboardAll(context.Background(), ids, migrate.Options{Concurrency: 1}); rep.Done != len(ids) || len(rep.Failures) != 0 {
			t.Fatalf("offboard: %+v", rep)
		}
	}
	count := func(cypher string, p any) int64 {
		return d.query(cypher, map[string]any{"t": p})[0].Values[0].(int64)
	}
	if n, r := count("MATCH (n:`"+label+"`) WHERE n.tenant_id IN $t RETURN count(n)", names),
		count("MATCH (:`"+label+"`)-[x]->() WHERE x.tenant_id IN $t RETURN count(x)", names); n != 0 || r != 0 {
		t.Errorf("the offboarded tenants' graph: %d nodes, %d relationships", n, r)
	}
	if n, r := count("MATCH (n:`"+label+"`) WHERE n.tenant_id = $t RETURN count(n)", keep.String()),
		count("MATCH (:`"+label+"`)-[x]->() WHERE x.tenant_id = $t RETURN count(x)", keep.String()); n != 2 || r != 1 {
		t.Errorf("the other tenant's graph: %d nodes, %d relationships, want 2 and 1", n, r)
	}
	if n := d.count(framework); n != 1 {
		t.Errorf("framework nodes after offboarding: %d, want 1", n)
	}
}
