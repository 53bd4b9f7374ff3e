package neo4j

import (
	"context"
	"errors"
	"testing"

	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// graphOps is every graph call, for fail-closed sweeps.
func graphOps(g *Graph) map[string]func(context.Context) error {
	e := func(_ any, err error) error { return err }
	return map[string]func(context.Context) error{
		"create node": func(ctx context.Context) error { return e(g.CreateNode(ctx, []string{"P"}, nil)) },
		"get node":    func(ctx context.Context) error { return e(g.GetNode(ctx, "n")) },
		"update node": func(ctx context.Context) error { return e(g.UpdateNode(ctx, "n", nil)) },
		"delete node": func(ctx context.Context) error { return g.DeleteNode(ctx, "n") },
		"match nodes": func(ctx context.Context) error { return e(g.MatchNodes(ctx, nil, nil, 0)) },
		"count nodes": func(ctx context.Context) error { return e(g.CountNodes(ctx, nil, nil)) },
		"create rel":  func(ctx context.Context) error { return e(g.CreateRelationship(ctx, "a", "b", "T", nil)) },
		"get rel":     func(ctx context.Context) error { return e(g.GetRelationship(ctx, "r")) },
		"update rel":  func(ctx context.Context) error { return e(g.UpdateRelationship(ctx, "r", nil)) },
		"delete rel":  func(ctx context.Context) error { return g.DeleteRelationship(ctx, "r") },
		"match rels":  func(ctx context.Context) error { return e(g.MatchRelationships(ctx, "", nil, 0)) },
		"traverse":    func(ctx context.Context) error { return e(g.Traverse(ctx, "n", Traversal{MaxDepth: 1})) },
		"write tx":    func(ctx context.Context) error { return g.Write(ctx, func(context.Context, Ops) error { return nil }) },
		"read tx":     func(ctx context.Context) error { return g.Read(ctx, func(context.Context, Ops) error { return nil }) },
	}
}

// Fail closed: every tenant-scoped call with no tenant (unbound, or in the
// tenant-global scope) fails with tenant_unbound at every scoped tier,
// opens no session and runs no statement; never the default tenant.
func TestFailClosedWithoutTenant(t *testing.T) {
	creds := func(context.Context, tenancy.ID) (routing.Credentials, error) {
		return routing.Credentials{Endpoint: "neo4j://t"}, nil
	}
	for tier, opts := range map[string][]Option{
		"tagged":    {GraphRoute("g", RouteConfig{TenantAware: true})},
		"namespace": {GraphRoute("g", RouteConfig{Database: naming.PerTenant("acme")})},
		"dedicated": {Routed(creds, routing.Limits{}), GraphRoute("g", RouteConfig{})},
	} {
		t.Run(tier, func(t *testing.T) {
			rec := &recorder{}
			g := build[*Graph](t, "g", append([]Option{withFake("plain", rec), withFakeRouted(rec)}, opts...)...)
			for name, op := range graphOps(g) {
				for scope, ctx := range map[string]context.Context{
					"unbound": context.Background(), "global": tenancy.WithGlobal(context.Background()),
				} {
					t.Logf("%s %s", name, scope)
					tenancytest.RequireUnbound(t, op(ctx), "m", "neo4j", "g")
				}
			}
			if s := rec.opened(); len(s) != 0 {
				t.Fatalf("failed calls opened sessions %v", s)
			}
		})
	}
}

// Fail closed: a credential resolver error is returned, and no driver is opened
// and no statement runs; a database resolver error likewise.
func TestFailClosedOnResolverErrors(t *testing.T) {
	boom := errors.New("vault down")
	rec := &recorder{}
	g := build[*Graph](t, "g", withFakeRouted(rec), GraphRoute("g", RouteConfig{}),
		Routed(func(context.Context, tenancy.ID) (routing.Credentials, error) { return routing.Credentials{}, boom }, routing.Limits{}))
	for name, op := range graphOps(g) {
		if err := op(ctxA); !errors.Is(err, boom) {
			t.Errorf("%s: %v, want the resolver's error", name, err)
		}
	}
	bad := build[*Graph](t, "g", withFake("plain", rec), GraphRoute("g", RouteConfig{Database: naming.Func(func(id tenancy.ID) (string, error) {
		if id == tA {
			return "", boom
		}
		return "Not_Valid", nil
	})}))
	for name, op := range graphOps(bad) {
		if err := op(ctxA); !errors.Is(err, boom) {
			t.Errorf("%s: %v, want the database resolver's error", name, err)
		}
		if err := op(ctxB); err == nil {
			t.Errorf("%s: an invalid database name was opened", name)
		}
	}
	if s := rec.opened(); len(s) != 0 {
		t.Fatalf("failed calls opened sessions %v", s)
	}
}

// A route with no tenant scoping (tier none) runs unbound on the module's
// database and carries no marker: it is a deliberately shared graph.
func TestUnscopedRouteNeedsNoTenant(t *testing.T) {
	rec := &recorder{}
	g := build[*Graph](t, "g", withFake("plain", rec), GraphRoute("g", RouteConfig{}))
	if _, err := g.GetNode(context.Background(), "n"); err != nil {
		t.Fatal(err)
	}
	if c := rec.snapshot()[0]; c.params["tenant"] != nil || c.database != "" {
		t.Fatalf("unscoped call %+v", c)
	}
}
