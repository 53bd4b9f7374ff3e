package neo4j_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestConformance probes every (kind, tier) cell of neo4j.Rules() on the
// real servers: tagged on the first, dedicated with A on the first and B
// on the second. Namespace (a database per tenant) runs where the server
// can create databases; on Community Edition the cell is skipped out loud
// once the server's refusal is checked to be ErrEnterpriseRequired.
func TestConformance(t *testing.T) {
	s1, s2 := testsvc.Neo4j(t), testsvc.Neo4jSecond(t)
	tenancytest.Conformance(t, neo4j.Rules(), func(t *testing.T, kind floors.Kind, tier tenancy.Tier) (tenancytest.Probe, error) {
		floor := modules.RequiredIsolation(tier)
		switch {
		case kind == "graph" && tier == tenancy.Tagged:
			g := graph(t, "g", floor, connect(s1), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true}))
			_, _, node, _ := graphProbes(t, g)
			return suspended(node, g), nil
		case kind == "graph" && tier == tenancy.Namespace:
			g, m := graphAndRunner(t, "ns", floor, connect(s1), neo4j.GraphRoute("ns", neo4j.RouteConfig{Database: naming.PerTenant("twkit")}))
			if reason := provisionDatabases(t, m, s1); reason != "" {
				return tenancytest.Probe{}, tenancytest.Unavailable(reason)
			}
			_, _, node, _ := graphProbes(t, g)
			return suspended(node, g), nil
		case kind == "graph" && tier == tenancy.Dedicated:
			g := graph(t, "g", floor, neo4j.Routed(aOnFirstBOnSecond(s1, s2), routing.Limits{}), neo4j.GraphRoute("g", neo4j.RouteConfig{}))
			_, _, node, _ := graphProbes(t, g)
			return suspended(node, g), nil
		case kind == "raw_cypher" && tier == tenancy.Dedicated:
			raw := start[*neo4j.RawCypher](t, "raw", floor, neo4j.Routed(aOnFirstBOnSecond(s1, s2), routing.Limits{}), neo4j.RawCypherRoute("raw", neo4j.RouteConfig{}))
			return suspended(rawProbe(t, raw, s1, s2), raw), nil
		}
		return tenancytest.Probe{}, tenancytest.ErrNotCovered
	})
}

// provisionDatabases creates A's and B's databases, or says why the
// server cannot: on Community Edition the refusal must be
// ErrEnterpriseRequired, and the reason names the cell's other coverage.
func provisionDatabases(t *testing.T, m *migrate.Runner, s testsvc.Neo4jServer) (unavailable string) {
	community := directTo(t, s).edition() == "community"
	for _, id := range []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB} {
		err := m.Provision(context.Background(), id)
		switch {
		case community && !errors.Is(err, neo4j.ErrEnterpriseRequired):
			t.Fatalf("Community Edition refused CREATE DATABASE with %v, want ErrEnterpriseRequired", err)
		case !community && err != nil:
			t.Fatal(err)
		}
	}
	if community {
		return "a database per tenant needs Neo4j Enterprise Edition and this server is Community " +
			"(its refusal was checked to be ErrEnterpriseRequired); the per-tenant session database " +
			"is covered by the unit tests (TestNamespaceSessionDatabases)"
	}
	return ""
}

// rawProbe writes one node through raw Cypher under a fresh label and
// removes the label from both servers when the test ends.
func rawProbe(t *testing.T, raw *neo4j.RawCypher, s1, s2 testsvc.Neo4jServer) tenancytest.Probe {
	label := uniqueLabel(t)
	d1, d2 := directTo(t, s1), directTo(t, s2)
	t.Cleanup(func() { d1.removeLabel(label); d2.removeLabel(label) })
	match := "MATCH (n:`" + label + "`) "
	count := func(ctx context.Context) (int, error) {
		rows, err := raw.Read(ctx, match+"RETURN n.k AS k", nil)
		return len(rows), err
	}
	return tenancytest.Probe{
		Write: func(ctx context.Context) error {
			_, err := raw.Write(ctx, "CREATE (n:`"+label+"` {k: 'a'})", nil)
			return err
		},
		Read: func(ctx context.Context) (bool, error) {
			n, err := count(ctx)
			return n > 0, err
		},
		Count:  count,
		Intact: func(ctx context.Context) (bool, error) { n, err := count(ctx); return n == 1, err },
		Update: func(ctx context.Context) error {
			return changed(raw.Write(ctx, match+"SET n.k = 'b' RETURN count(n) AS c", nil))
		},
		Delete: func(ctx context.Context) error {
			return changed(raw.Write(ctx, match+"DETACH DELETE n RETURN count(*) AS c", nil))
		},
	}
}

// changed turns a raw write's count c into the probe's verdict: nil when
// it touched something, not found when it touched nothing.
func changed(rows []map[string]any, err error) error {
	if err != nil {
		return err
	}
	if len(rows) == 1 && rows[0]["c"] == int64(0) {
		return neo4j.ErrNotFound
	}
	return nil
}
