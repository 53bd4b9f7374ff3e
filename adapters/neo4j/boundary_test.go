package neo4j_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// The boundary probes and the parity lane against the real Neo4j
// Community servers that scripts/neo4j.sh starts (two of them: the
// dedicated tier puts its two tenants on two servers). Without them these
// tests skip saying so, or fail under CI (internal/testsvc).

func visible(err error) (bool, error) {
	if errors.Is(err, neo4j.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// probeGraph runs the node and the relationship probes on g, then removes
// what it wrote under both tenants.
func probeGraph(t *testing.T, g *neo4j.Graph) (label string) {
	label, w, node, rel := graphProbes(t, g)
	t.Run("node", func(t *testing.T) {
		tenancytest.Boundary(t, node)
		// B cannot link its own node to A's.
		ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
		own, err := g.CreateNode(ctxB, []string{label}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.CreateRelationship(ctxB, own.ID, w.to, "LINK", nil); !errors.Is(err, neo4j.ErrNotFound) {
			t.Errorf("B linked to A's node: %v", err)
		}
	})
	t.Run("relationship", func(t *testing.T) { tenancytest.Boundary(t, rel) })
	return label
}

// graphWrite is what a graph probe's Write made last: two nodes and the
// relationship between them.
type graphWrite struct{ from, to, rel string }

// graphProbes returns the node and the relationship probes of g over a
// fresh label, and removes what they wrote under both tenants when the
// test ends. Each probe's Write creates two nodes and a relationship, and
// records their ids in w.
func graphProbes(t *testing.T, g *neo4j.Graph) (label string, w *graphWrite, node, rel tenancytest.Probe) {
	label = uniqueLabel(t)
	ctxA := tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	ctxB := tenancy.WithTenant(context.Background(), tenancytest.TenantB)
	t.Cleanup(func() {
		for _, ctx := range []context.Context{ctxA, ctxB} {
			nodes, _ := g.MatchNodes(ctx, []string{label}, nil, 0)
			for _, n := range nodes {
				_ = g.DeleteNode(ctx, n.ID)
			}
		}
	})
	w = &graphWrite{}
	write := func(ctx context.Context) error {
		a, err := g.CreateNode(ctx, []string{label}, map[string]any{"k": "a"})
		if err != nil {
			return err
		}
		b, err := g.CreateNode(ctx, []string{label}, map[string]any{"k": "b"})
		if err != nil {
			return err
		}
		r, err := g.CreateRelationship(ctx, a.ID, b.ID, "LINK", map[string]any{"k": "a"})
		*w = graphWrite{a.ID, b.ID, r.ID}
		return err
	}
	search := func(ctx context.Context) (int, error) {
		paths, err := g.Traverse(ctx, w.from, neo4j.Traversal{Types: []string{"LINK"}, MaxDepth: 2})
		return len(paths), err
	}
	node = tenancytest.Probe{
		Write: write,
		Read:  func(ctx context.Context) (bool, error) { _, err := g.GetNode(ctx, w.from); return visible(err) },
		Intact: func(ctx context.Context) (bool, error) {
			n, err := g.GetNode(ctx, w.from)
			return err == nil && n.Props["k"] == "a", err
		},
		List: func(ctx context.Context) ([]string, error) {
			nodes, err := g.MatchNodes(ctx, []string{label}, nil, 0)
			var ids []string
			for _, n := range nodes {
				if n.ID == w.from {
					ids = append(ids, "probe")
				}
			}
			return ids, err
		},
		RecordID: "probe",
		Count: func(ctx context.Context) (int, error) {
			return g.CountNodes(ctx, []string{label}, map[string]any{"k": "a"})
		},
		Search: search,
		Update: func(ctx context.Context) error {
			_, err := g.UpdateNode(ctx, w.from, map[string]any{"k": "changed"})
			return err
		},
		Delete: func(ctx context.Context) error { return g.DeleteNode(ctx, w.from) },
	}
	rel = tenancytest.Probe{
		Write: write,
		Read: func(ctx context.Context) (bool, error) {
			_, err := g.GetRelationship(ctx, w.rel)
			return visible(err)
		},
		Intact: func(ctx context.Context) (bool, error) {
			r, err := g.GetRelationship(ctx, w.rel)
			return err == nil && r.Props["k"] == "a", err
		},
		Count: func(ctx context.Context) (int, error) {
			rs, err := g.MatchRelationships(ctx, "LINK", map[string]any{"k": "a"}, 0)
			n := 0
			for _, r := range rs {
				if r.ID == w.rel {
					n++
				}
			}
			return n, err
		},
		Search: search,
		Update: func(ctx context.Context) error {
			_, err := g.UpdateRelationship(ctx, w.rel, map[string]any{"k": "changed"})
			return err
		},
		Delete: func(ctx context.Context) error { return g.DeleteRelationship(ctx, w.rel) },
	}
	return label, w, node, rel
}

func TestBoundaryTagged(t *testing.T) {
	s := testsvc.Neo4j(t)
	probeGraph(t, graph(t, "g", connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true})))
}

// The namespace tier needs one database per tenant, which only Neo4j
// Enterprise Edition can create; Community serves a single user database.
// On Community the test checks that the server's refusal is reported as
// ErrEnterpriseRequired, then skips the probe saying so.
func TestBoundaryNamespace(t *testing.T) {
	s := testsvc.Neo4j(t)
	g, m := graphAndRunner(t, "ns", connect(s), neo4j.GraphRoute("ns", neo4j.RouteConfig{Database: naming.PerTenant("twprobe")}))
	edition := directTo(t, s).edition()
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
		err := m.Provision(context.Background(), id)
		if edition == "community" {
			if !errors.Is(err, neo4j.ErrEnterpriseRequired) {
				t.Fatalf("Community Edition refused CREATE DATABASE with %v, want ErrEnterpriseRequired", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if edition == "community" {
		t.Skip("SKIPPED: the namespace tier (a database per tenant) cannot run on this Neo4j Community server: " +
			"CREATE DATABASE needs Enterprise Edition (its refusal was checked to be ErrEnterpriseRequired); " +
			"the per-tenant session database is covered only by the unit tests (TestNamespaceSessionDatabases)")
	}
	probeGraph(t, g)
}

// Dedicated: tenant A's driver is the first server, B's the second. Beyond
// the probe, a plain driver on each server shows where A's and B's nodes
// physically are.
func TestBoundaryDedicated(t *testing.T) {
	s1, s2 := testsvc.Neo4j(t), testsvc.Neo4jSecond(t)
	resolve := aOnFirstBOnSecond(s1, s2)
	g := graph(t, "g", neo4j.Routed(resolve, routing.Limits{}), neo4j.GraphRoute("g", neo4j.RouteConfig{}))
	label := probeGraph(t, g)
	a, errA := g.CountNodes(tenancy.WithTenant(context.Background(), tenancytest.TenantA), []string{label}, nil)
	b, errB := g.CountNodes(tenancy.WithTenant(context.Background(), tenancytest.TenantB), []string{label}, nil)
	if err := errors.Join(errA, errB); err != nil || a == 0 || b == 0 {
		t.Fatalf("A sees %d nodes, B %d (%v); the probe left some of each", a, b, err)
	}
	if n1, n2 := directTo(t, s1).count(label), directTo(t, s2).count(label); n1 != int64(a) || n2 != int64(b) {
		t.Fatalf("the first server holds %d nodes (A has %d), the second %d (B has %d)", n1, a, n2, b)
	}
}

// Parity: the same suite with tenancy off, and on with only the default tenant
// bound, gives identical results; it first proves it reads its own writes.
func TestParityDefaultTenant(t *testing.T) {
	s := testsvc.Neo4j(t)
	off := graph(t, "off", connect(s), neo4j.GraphRoute("off", neo4j.RouteConfig{}))
	on := graph(t, "on", connect(s), neo4j.GraphRoute("on", neo4j.RouteConfig{TenantAware: true}))
	ctx := tenancy.WithTenant(context.Background(), tenancy.Default)
	suite := func(g *neo4j.Graph) []any {
		label := uniqueLabel(t)
		t.Cleanup(func() {
			nodes, _ := g.MatchNodes(ctx, []string{label}, nil, 0)
			for _, n := range nodes {
				_ = g.DeleteNode(ctx, n.ID)
			}
		})
		var out []any
		a, err := g.CreateNode(ctx, []string{label}, map[string]any{"k": "a"})
		out = append(out, a.Props, err)
		got, err := g.GetNode(ctx, a.ID)
		if err != nil || got.Props["k"] != "a" {
			t.Fatalf("the suite does not read its own write: %v %v", got, err)
		}
		b, err := g.CreateNode(ctx, []string{label}, map[string]any{"k": "b"})
		out = append(out, b.Props, err)
		r, err := g.CreateRelationship(ctx, a.ID, b.ID, "LINK", map[string]any{"w": int64(1)})
		out = append(out, r.Props, err)
		n, err := g.CountNodes(ctx, []string{label}, nil)
		out = append(out, n, err)
		nodes, err := g.MatchNodes(ctx, []string{label}, map[string]any{"k": "b"}, 0)
		out = append(out, len(nodes), err)
		rels, err := g.MatchRelationships(ctx, "LINK", map[string]any{"w": int64(1)}, 0)
		out = append(out, len(rels), err)
		paths, err := g.Traverse(ctx, a.ID, neo4j.Traversal{MinDepth: 1, MaxDepth: 2})
		out = append(out, len(paths), err)
		u, err := g.UpdateNode(ctx, b.ID, map[string]any{"k": "c"})
		out = append(out, u.Props, err)
		ur, err := g.UpdateRelationship(ctx, r.ID, map[string]any{"w": int64(2)})
		out = append(out, ur.Props, err)
		out = append(out, g.DeleteRelationship(ctx, r.ID))
		out = append(out, g.DeleteNode(ctx, a.ID))
		_, err = g.GetNode(ctx, a.ID)
		out = append(out, err)
		n, err = g.CountNodes(ctx, []string{label}, nil)
		return append(out, n, err)
	}
	a, b := fmt.Sprint(suite(off)), fmt.Sprint(suite(on))
	if a != b {
		t.Fatalf("tenancy off and on with the default tenant differ:\noff %s\non  %s", a, b)
	}
	t.Logf("both: %s", a)
}
