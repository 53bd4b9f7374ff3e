package neo4j_test

import (
	"testing"

	drv "github.com/neo4j/neo4j-go-driver/v5/neo4j"
	"github.com/neo4j/neo4j-go-driver/v5/neo4j/dbtype"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/ratio"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestRatioTaggedRead: P10, a tagged point read through the route vs the
// same Cypher and predicate by hand (a session and a read transaction per
// read, as the route does), same server, same driver settings.
func TestRatioTaggedRead(t *testing.T) {
	ratio.SkipUnlessEnabled(t)
	s := testsvc.Neo4j(t)
	g, label := tagged(t)
	ctx := srvA
	const seeded = 200
	ids := make([]string, seeded)
	for i := range ids {
		ids[i] = must[neo4j.Node](t)(g.CreateNode(ctx, []string{label}, map[string]any{"i": i})).ID
	}
	hand := directTo(t, s).d
	tenant := tenancytest.TenantA.String()
	const cypher = "MATCH (n) WHERE elementId(n) = $id AND n." + neo4j.TenantProperty + " = $tenant RETURN n"
	ours := func(n int) {
		for i := range n {
			if _, err := g.GetNode(ctx, ids[i%seeded]); err != nil {
				t.Fatal(err)
			}
		}
	}
	baseline := func(n int) {
		for i := range n {
			// What hand-written code does per read: the tenant from the
			// context, a session, a read transaction, the node decoded.
			id, err := tenancy.Require(ctx)
			if err != nil || id.String() != tenant {
				t.Fatal("tenant", err)
			}
			sess := hand.NewSession(ctx, drv.SessionConfig{})
			out, err := sess.ExecuteRead(ctx, func(tx drv.ManagedTransaction) (any, error) {
				res, err := tx.Run(ctx, cypher, map[string]any{"id": ids[i%seeded], "tenant": tenant})
				if err != nil {
					return nil, err
				}
				rec, err := res.Single(ctx)
				if err != nil {
					return nil, err
				}
				return rec.Values[0].(dbtype.Node), nil
			})
			_ = sess.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			node := out.(dbtype.Node)
			props := make(map[string]any, len(node.Props))
			for k, v := range node.Props {
				if k != neo4j.TenantProperty {
					props[k] = v
				}
			}
			_ = neo4j.Node{ID: node.ElementId, Labels: node.Labels, Props: props}
		}
	}
	// Many short rounds: a round is about 40 reads, so a neighbour's burst
	// on this shared machine lands on both sides of one round, and the
	// median over 201 rounds settles within a few percent.
	ratio.Report(t, ratio.Pair{Label: "P10", Name: "neo4j-tagged-read", Iterations: 20, Rounds: 201,
		Ours: ours, Baseline: baseline}, 1.05)
}
