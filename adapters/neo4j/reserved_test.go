package neo4j_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// historyLabel is the label of the framework's migration history nodes.
const historyLabel = "TenantwireMigration"

// A tenant on a tagged route cannot write a history node claiming the
// shared database is at a version it is not: the label is refused
// (reserved_name) before anything is written, and so is a match on it.
// A forged node left from before (it carries the tenant property) is not
// believed: the start-up check still finds the shared database at 0, and
// the migrator removes it and applies every step.
func TestTenantCannotForgeMigrationHistory(t *testing.T) {
	s := testsvc.Neo4j(t)
	label, module, ds := migrationScope(t, s)
	d := ds[0]
	ctx := context.Background()
	ctxA := tenancy.WithTenant(ctx, tenancytest.TenantA)
	route := neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true})
	all := threeSteps(label, true)
	m, g := startMigrator(t, module, connect(s), route, modules.Migrations(all))

	forged := map[string]any{"module": module, "target": "shared", "version": int64(3), "name": "by_name", "checksum": "x", "state": "applied"}
	_, err := g.CreateNode(ctxA, []string{historyLabel}, forged)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeReservedName, "neo4j", module, "g", historyLabel)
	if h := d.history(module); len(h) != 0 {
		t.Fatalf("a refused call wrote history: %v", h)
	}
	_, err = g.MatchNodes(ctxA, []string{historyLabel}, map[string]any{"module": module}, 10)
	_ = tenancytest.RequireCode(t, err, tenancy.CodeReservedName, "neo4j", module, "g")

	// Without its removal the forged node holds step 3's key: bound the
	// wait for a claim nobody releases.
	defer neo4j.SetClaimWait(time.Second)()
	d.query("CREATE (h:"+historyLabel+" $p) SET h.tenant_id = $t", map[string]any{"p": forged, "t": tenancytest.TenantA.String()})
	app, _, _ := newApp(t, module, connect(s), route, modules.Migrations(all), modules.RequiredVersion(2))
	behind(t, app.Start(ctx), "", "the shared tables are at migration version 0", "need 2")
	if ch, err := m.Migrate(ctx, tenancy.ID{}); err != nil || len(ch) != 3 {
		t.Fatalf("migrating past the forged record: %v, %v", ch, err)
	}
	if h, want := d.history(module), []string{"shared/1/applied", "shared/2/applied", "shared/3/applied"}; !slices.Equal(h, want) {
		t.Fatalf("history %v, want %v", h, want)
	}
	if n := d.query("MATCH (h:"+historyLabel+" {module: $m}) WHERE h.tenant_id IS NOT NULL RETURN count(h)", map[string]any{"m": module})[0].Values[0]; n != int64(0) {
		t.Fatalf("%v forged history nodes left", n)
	}
}

// A route without the tenant predicate on the database that holds the
// shared history (tier none) reaches no history node: not by id, not by
// property match, not as a traversal start or a relationship end. The
// history and the version the start-up check reads stay as migrated.
func TestUntaggedRouteCannotReachHistory(t *testing.T) {
	s := testsvc.Neo4j(t)
	label, module, ds := migrationScope(t, s)
	d := ds[0]
	ctx := context.Background()
	route := neo4j.GraphRoute("g", neo4j.RouteConfig{})
	all := threeSteps(label, false)
	m, g := startMigrator(t, module, connect(s), route, modules.Migrations(all))
	if ch, err := m.Migrate(ctx, tenancy.ID{}); err != nil || len(ch) != 3 {
		t.Fatalf("migrating: %v, %v", ch, err)
	}
	want := d.history(module)
	id := d.query("MATCH (h:"+historyLabel+" {module: $m, version: 3}) RETURN elementId(h)", map[string]any{"m": module})[0].Values[0].(string)
	own, err := g.CreateNode(ctx, []string{label}, map[string]any{"code": "own"})
	if err != nil {
		t.Fatal(err)
	}
	notFound := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, neo4j.ErrNotFound) {
			t.Errorf("%s on a history node: %v, want ErrNotFound", op, err)
		}
	}
	_, err = g.GetNode(ctx, id)
	notFound("GetNode", err)
	_, err = g.UpdateNode(ctx, id, map[string]any{"version": int64(99)})
	notFound("UpdateNode", err)
	_, err = g.CreateRelationship(ctx, own.ID, id, "LINKS", nil)
	notFound("CreateRelationship", err)
	notFound("DeleteNode", g.DeleteNode(ctx, id))
	if ns, err := g.MatchNodes(ctx, nil, map[string]any{"module": module}, 10); err != nil || len(ns) != 0 {
		t.Errorf("MatchNodes by the history's properties: %v, %v", ns, err)
	}
	if n, err := g.CountNodes(ctx, nil, map[string]any{"module": module, "target": "shared"}); err != nil || n != 0 {
		t.Errorf("CountNodes by the history's properties: %d, %v", n, err)
	}
	if ps, err := g.Traverse(ctx, id, neo4j.Traversal{Direction: neo4j.Both, MaxDepth: 1}); err != nil || len(ps) != 0 {
		t.Errorf("Traverse from a history node: %v, %v", ps, err)
	}
	if h := d.history(module); !slices.Equal(h, want) {
		t.Fatalf("history %v after the calls, want %v", h, want)
	}
	app, _, _ := newApp(t, module, connect(s), route, modules.Migrations(all), modules.RequiredVersion(3))
	if err := app.Start(ctx); err != nil {
		t.Fatalf("start at the migrated version: %v", err)
	}
	_ = app.Stop(ctx)
}
