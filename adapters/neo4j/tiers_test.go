package neo4j

import (
	"context"
	"errors"
	"fmt"
	"testing"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

var (
	tA   = tenancytest.TenantA
	tB   = tenancytest.TenantB
	ctxA = tenancy.WithTenant(context.Background(), tA)
	ctxB = tenancy.WithTenant(context.Background(), tB)
)

// exercise runs every graph operation once under ctx.
func exercise(t *testing.T, g *Graph, ctx context.Context) {
	t.Helper()
	errs := []error{}
	add := func(_ any, err error) { errs = append(errs, err) }
	add(g.CreateNode(ctx, []string{"Person"}, map[string]any{"name": "ada"}))
	add(g.GetNode(ctx, "4:db:1"))
	add(g.UpdateNode(ctx, "4:db:1", map[string]any{"age": 3}))
	add(g.MatchNodes(ctx, []string{"Person"}, map[string]any{"name": "ada"}, 0))
	add(g.CountNodes(ctx, []string{"Person"}, nil))
	add(g.CreateRelationship(ctx, "4:db:1", "4:db:2", "KNOWS", nil))
	add(g.GetRelationship(ctx, "5:db:1"))
	add(g.UpdateRelationship(ctx, "5:db:1", map[string]any{"since": 2}))
	add(g.MatchRelationships(ctx, "KNOWS", nil, 5))
	add(g.Traverse(ctx, "4:db:1", Traversal{MaxDepth: 2}))
	add(nil, g.DeleteRelationship(ctx, "5:db:1"))
	add(nil, g.DeleteNode(ctx, "4:db:1"))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

const opsPerExercise = 12

// Tagged: one driver, the module's database for every tenant, and every
// statement carries the calling tenant as $tenant and passes inspection.
func TestTaggedSessionsAndPredicates(t *testing.T) {
	rec := &recorder{}
	g := build[*Graph](t, "g", withFake("plain", rec), Database("graph"), GraphRoute("g", RouteConfig{TenantAware: true}))
	exercise(t, g, ctxA)
	exercise(t, g, ctxB)
	calls := rec.snapshot()
	if len(calls) != 2*opsPerExercise {
		t.Fatalf("%d statements, want %d", len(calls), 2*opsPerExercise)
	}
	for i, c := range calls {
		want := tA.String()
		if i >= opsPerExercise {
			want = tB.String()
		}
		if c.driver != "plain" || c.database != "graph" || c.params["tenant"] != want {
			t.Errorf("statement %d: driver %s database %q tenant %v, want plain/graph/%s", i, c.driver, c.database, c.params["tenant"], want)
		}
		if bad := uncovered(c.cypher); len(bad) > 0 {
			t.Errorf("statement %q: %v uncovered", c.cypher, bad)
		}
	}
	// Results never expose the marker.
	n, _ := g.GetNode(ctxA, "4:db:1")
	if _, ok := n.Props[TenantProperty]; ok {
		t.Error("node props expose the tenant marker")
	}
}

// Namespace: one driver; each tenant's session opens its own database.
func TestNamespaceSessionDatabases(t *testing.T) {
	rec := &recorder{}
	g := build[*Graph](t, "g", withFake("plain", rec), GraphRoute("g", RouteConfig{Database: naming.PerTenant("acme")}))
	exercise(t, g, ctxA)
	exercise(t, g, ctxB)
	dbA, dbB := "acme-"+tA.Hex(), "acme-"+tB.Hex()
	for i, c := range rec.snapshot() {
		want := dbA
		if i >= opsPerExercise {
			want = dbB
		}
		if c.driver != "plain" || c.database != want {
			t.Errorf("statement %d ran on %s/%s, want plain/%s", i, c.driver, c.database, want)
		}
		if c.params["tenant"] != nil {
			t.Errorf("namespace statement carries a tenant marker: %q", c.cypher)
		}
	}
}

// routedTo resolves each tenant to its own endpoint and database.
func routedTo(creds map[tenancy.ID]routing.Credentials) routing.Resolver {
	return func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		c, ok := creds[id]
		if !ok {
			return routing.Credentials{}, fmt.Errorf("no credentials for %s", id)
		}
		return c, nil
	}
}

// Dedicated: each tenant's statements run on its own driver and database.
func TestDedicatedDriverPerTenant(t *testing.T) {
	rec := &recorder{}
	resolve := routedTo(map[tenancy.ID]routing.Credentials{
		tA: {Endpoint: "neo4j://a", User: "a", Secret: "sa", Params: map[string]string{"database": "dba"}},
		tB: {Endpoint: "neo4j://b", User: "b", Secret: "sb"},
	})
	g := build[*Graph](t, "g", withFakeRouted(rec), Routed(resolve, routing.Limits{}), Database("shared"), GraphRoute("g", RouteConfig{}))
	exercise(t, g, ctxA)
	exercise(t, g, ctxB)
	for i, c := range rec.snapshot() {
		want := "neo4j://a/dba"
		if i >= opsPerExercise {
			want = "neo4j://b/shared" // no database in B's credentials: the module's
		}
		if got := c.driver + "/" + c.database; got != want {
			t.Errorf("statement %d ran on %s, want %s", i, got, want)
		}
		if c.params["tenant"] != nil {
			t.Errorf("dedicated statement carries a tenant marker: %q", c.cypher)
		}
	}
	// An unknown tenant gets its resolver's error, never another driver.
	other := tenancy.WithTenant(context.Background(), tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c"))
	before := len(rec.snapshot())
	if _, err := g.GetNode(other, "x"); err == nil {
		t.Fatal("tenant without credentials was served")
	}
	if len(rec.snapshot()) != before {
		t.Fatal("a statement ran for a tenant without credentials")
	}
}

// The raw hatch, on its routed driver, runs the caller's text on the
// tenant's own driver, values as parameters.
func TestRawRunsOnTheTenantsDriver(t *testing.T) {
	rec := &recorder{}
	resolve := routedTo(map[tenancy.ID]routing.Credentials{
		tA: {Endpoint: "neo4j://a"}, tB: {Endpoint: "neo4j://b"},
	})
	raw := build[*RawCypher](t, "raw", withFakeRouted(rec), Routed(resolve, routing.Limits{}), RawCypherRoute("raw", RouteConfig{}))
	if _, err := raw.Write(ctxA, "CREATE (n:X {v: $v})", map[string]any{"v": 1}); err != nil {
		t.Fatal(err)
	}
	rows, err := raw.Read(ctxB, "MATCH (n) RETURN n", nil)
	if err != nil || len(rows) != 1 || rows[0]["n"] == nil {
		t.Fatalf("raw read: %v %v", rows, err)
	}
	calls := rec.snapshot()
	if calls[0].driver != "neo4j://a" || calls[0].mode != "write" || calls[0].params["v"] != 1 ||
		calls[1].driver != "neo4j://b" || calls[1].mode != "read" {
		t.Fatalf("raw calls %+v", calls)
	}
	if _, err := raw.Read(context.Background(), "RETURN 1", nil); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("unbound raw: %v", err)
	}
}

// A transaction pins its tenant, driver, database and session for the
// whole scope; a call under another tenant inside it is refused with
// tenant_scope_changed and runs nothing.
func TestTransactionPinsTenantAndDriver(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"tagged", []Option{GraphRoute("g", RouteConfig{TenantAware: true})}},
		{"namespace", []Option{GraphRoute("g", RouteConfig{Database: naming.PerTenant("acme")})}},
		{"dedicated", []Option{Routed(routedTo(map[tenancy.ID]routing.Credentials{
			tA: {Endpoint: "neo4j://a"}, tB: {Endpoint: "neo4j://b"}}), routing.Limits{}), GraphRoute("g", RouteConfig{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			g := build[*Graph](t, "g", append([]Option{withFake("plain", rec), withFakeRouted(rec)}, tc.opts...)...)
			var leaked Ops
			err := g.Write(ctxA, func(ctx context.Context, tx Ops) error {
				leaked = tx
				if _, err := tx.CreateNode(ctx, []string{"P"}, nil); err != nil {
					return err
				}
				_, err := tx.GetNode(ctxB, "4:db:1")
				if tenancy.CodeOf(err) != tenancy.CodeTenantScopeChanged {
					t.Errorf("call under B inside A's transaction: %v, want tenant_scope_changed", err)
				}
				var te *tenancy.Error
				if errors.As(err, &te) && (te.Backend != "neo4j" || te.Route != "g" || te.Module != "m") {
					t.Errorf("error fields %+v", te)
				}
				if _, err := tx.GetNode(context.Background(), "x"); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
					t.Errorf("unbound call inside the transaction: %v", err)
				}
				_, err = tx.UpdateNode(ctx, "4:db:1", map[string]any{"k": 1})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			calls := rec.snapshot()
			if len(calls) != 2 || calls[0].session != calls[1].session || calls[0].mode != "write" {
				t.Fatalf("transaction statements %+v, want two in one write session", calls)
			}
			if s := rec.opened(); len(s) != 1 {
				t.Fatalf("sessions opened %v, want one", s)
			}
			if _, err := leaked.GetNode(ctxA, "x"); err == nil {
				t.Fatal("a Tx was usable after its scope ended")
			}
			err = g.Read(ctxA, func(ctx context.Context, tx Ops) error {
				_, err := tx.CreateNode(ctx, nil, nil)
				return err
			})
			if err == nil {
				t.Fatal("write inside a read transaction succeeded")
			}
			if len(rec.snapshot()) != 2 {
				t.Fatal("refused calls ran statements")
			}
		})
	}
}

// Not found: a match that returns nothing is ErrNotFound, so a cross-tenant
// update or delete (whose predicate matches nothing) reports not found.
func TestNoMatchIsNotFound(t *testing.T) {
	rec := &recorder{reply: func(call) ([]*drv.Record, error) {
		return []*drv.Record{record("deleted", int64(0))}, nil
	}}
	g := build[*Graph](t, "g", withFake("plain", rec), GraphRoute("g", RouteConfig{TenantAware: true}))
	if err := g.DeleteNode(ctxB, "4:db:1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete: %v", err)
	}
	if err := g.DeleteRelationship(ctxB, "5:db:1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete rel: %v", err)
	}
	rec.reply = func(call) ([]*drv.Record, error) { return nil, nil }
	if _, err := g.UpdateNode(ctxB, "4:db:1", map[string]any{"k": 1}); !errors.Is(err, ErrNotFound) {
		t.Errorf("update: %v", err)
	}
	if _, err := g.UpdateRelationship(ctxB, "5:db:1", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("update rel: %v", err)
	}
	if _, err := g.CreateRelationship(ctxB, "4:db:1", "4:db:2", "T", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("link to invisible nodes: %v", err)
	}
}
