package neo4j_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"testing"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// QUALITY R1 against a real server. No Neo4j server can be installed on
// these machines, so these run only when NEO4J_URI (with NEO4J_USER and
// NEO4J_PASSWORD) names one, and say plainly that they were skipped
// otherwise. The unit tests in this package cover the same mapping
// through a recording driver.

type server struct{ uri, user, pass string }

func realServer(t *testing.T) server {
	t.Helper()
	s := server{os.Getenv("NEO4J_URI"), os.Getenv("NEO4J_USER"), os.Getenv("NEO4J_PASSWORD")}
	if s.uri == "" {
		t.Skip("SKIPPED: NEO4J_URI is not set and no Neo4j server can be installed on this machine; " +
			"set NEO4J_URI, NEO4J_USER and NEO4J_PASSWORD to run the Neo4j boundary probes against a real server")
	}
	return s
}

func (s server) connect() neo4j.Option {
	return neo4j.Connect(s.uri, drv.BasicAuth(s.user, s.pass, ""))
}

func graph(t *testing.T, route string, opts ...neo4j.Option) *neo4j.Graph {
	t.Helper()
	var g *neo4j.Graph
	app := fx.New(fx.NopLogger, neo4j.Module("probe", opts...),
		fx.Invoke(fx.Annotate(func(v *neo4j.Graph) { g = v }, fx.ParamTags(`name:"`+route+`"`))))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return g
}

func uniqueLabel(t *testing.T) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "TwProbe_" + hex.EncodeToString(b[:])
}

func visible(err error) (bool, error) {
	if errors.Is(err, neo4j.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// probeGraph runs the node and the relationship probes on g, then removes
// what it wrote under both tenants.
func probeGraph(t *testing.T, g *neo4j.Graph) {
	label := uniqueLabel(t)
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
	var from, to, rel string
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
		from, to, rel = a.ID, b.ID, r.ID
		return err
	}
	search := func(ctx context.Context) (int, error) {
		paths, err := g.Traverse(ctx, from, neo4j.Traversal{Types: []string{"LINK"}, MaxDepth: 2})
		return len(paths), err
	}
	t.Run("node", func(t *testing.T) {
		tenancytest.Boundary(t, tenancytest.Probe{
			Write: write,
			Read:  func(ctx context.Context) (bool, error) { _, err := g.GetNode(ctx, from); return visible(err) },
			Intact: func(ctx context.Context) (bool, error) {
				n, err := g.GetNode(ctx, from)
				return err == nil && n.Props["k"] == "a", err
			},
			List: func(ctx context.Context) ([]string, error) {
				nodes, err := g.MatchNodes(ctx, []string{label}, nil, 0)
				var ids []string
				for _, n := range nodes {
					if n.ID == from {
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
				_, err := g.UpdateNode(ctx, from, map[string]any{"k": "changed"})
				return err
			},
			Delete: func(ctx context.Context) error { return g.DeleteNode(ctx, from) },
		})
		// B cannot link its own node to A's.
		own, err := g.CreateNode(ctxB, []string{label}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.CreateRelationship(ctxB, own.ID, to, "LINK", nil); !errors.Is(err, neo4j.ErrNotFound) {
			t.Errorf("B linked to A's node: %v", err)
		}
	})
	t.Run("relationship", func(t *testing.T) {
		tenancytest.Boundary(t, tenancytest.Probe{
			Write: write,
			Read: func(ctx context.Context) (bool, error) {
				_, err := g.GetRelationship(ctx, rel)
				return visible(err)
			},
			Intact: func(ctx context.Context) (bool, error) {
				r, err := g.GetRelationship(ctx, rel)
				return err == nil && r.Props["k"] == "a", err
			},
			Count: func(ctx context.Context) (int, error) {
				rs, err := g.MatchRelationships(ctx, "LINK", map[string]any{"k": "a"}, 0)
				n := 0
				for _, r := range rs {
					if r.ID == rel {
						n++
					}
				}
				return n, err
			},
			Search: search,
			Update: func(ctx context.Context) error {
				_, err := g.UpdateRelationship(ctx, rel, map[string]any{"k": "changed"})
				return err
			},
			Delete: func(ctx context.Context) error { return g.DeleteRelationship(ctx, rel) },
		})
	})
}

func TestBoundaryTagged(t *testing.T) {
	s := realServer(t)
	probeGraph(t, graph(t, "g", s.connect(), neo4j.GraphRoute("g", neo4j.TenantAware())))
}

// provision creates both probe tenants' databases, or skips when the
// server is Community Edition (CREATE DATABASE needs Enterprise).
func provision(t *testing.T, s server, prefix string) {
	t.Helper()
	g := graph(t, "ns", s.connect(), neo4j.GraphRoute("ns", neo4j.PerTenantDatabasePrefix(prefix)))
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
		if _, err := g.Provision(context.Background(), id); errors.Is(err, neo4j.ErrEnterpriseRequired) {
			t.Skipf("SKIPPED: the server refuses CREATE DATABASE, which needs Neo4j Enterprise Edition: %v", err)
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

func TestBoundaryNamespace(t *testing.T) {
	s := realServer(t)
	provision(t, s, "twprobe")
	probeGraph(t, graph(t, "g", s.connect(), neo4j.GraphRoute("g", neo4j.PerTenantDatabasePrefix("twprobe"))))
}

// Dedicated: each tenant's own driver and database. One server stands in
// for two, with per-tenant databases, since only one is available.
func TestBoundaryDedicated(t *testing.T) {
	s := realServer(t)
	provision(t, s, "twprobe")
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		db, err := neo4j.TenantDatabase("twprobe")(id)
		return routing.Credentials{Endpoint: s.uri, User: s.user, Secret: s.pass,
			Params: map[string]string{"database": db}}, err
	}
	probeGraph(t, graph(t, "g", neo4j.Routed(resolve), neo4j.GraphRoute("g")))
}

// R8: the same suite with tenancy off, and on with only the default tenant
// bound, gives identical results; it first proves it reads its own writes.
func TestParityDefaultTenant(t *testing.T) {
	s := realServer(t)
	off := graph(t, "off", s.connect(), neo4j.GraphRoute("off"))
	on := graph(t, "on", s.connect(), neo4j.GraphRoute("on", neo4j.TenantAware()))
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
		b, err := g.CreateNode(ctx, []string{label}, map[string]any{"k": "b"})
		out = append(out, b.Props, err)
		r, err := g.CreateRelationship(ctx, a.ID, b.ID, "LINK", map[string]any{"w": int64(1)})
		out = append(out, r.Props, err)
		got, err := g.GetNode(ctx, a.ID)
		if err != nil || got.Props["k"] != "a" {
			t.Fatalf("the suite does not read its own write: %v %v", got, err)
		}
		n, err := g.CountNodes(ctx, []string{label}, nil)
		out = append(out, n, err)
		paths, err := g.Traverse(ctx, a.ID, neo4j.Traversal{MinDepth: 1, MaxDepth: 2})
		out = append(out, len(paths), err)
		u, err := g.UpdateNode(ctx, b.ID, map[string]any{"k": "c"})
		out = append(out, u.Props, err)
		out = append(out, g.DeleteNode(ctx, a.ID))
		n, err = g.CountNodes(ctx, []string{label}, nil)
		return append(out, n, err)
	}
	if a, b := fmt.Sprint(suite(off)), fmt.Sprint(suite(on)); a != b {
		t.Fatalf("tenancy off and on with the default tenant differ:\noff %s\non  %s", a, b)
	}
}
