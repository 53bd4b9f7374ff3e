package neo4j_test

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// TestArchiveRoundTripNeo4jDedicated: on a routed module, each tenant on
// a server of its own (A on the third test server, C on the fourth, B on
// the second), A's graph comes back under C with the same sections and
// reads and no tenant property stamped; B is untouched; A's id is
// nowhere in C's records; and offboarding C leaves its server empty,
// the verifier finding nothing of it.
func TestArchiveRoundTripNeo4jDedicated(t *testing.T) {
	own3, own4 := testsvc.Neo4jOwn(t)
	s2 := testsvc.Neo4jSecond(t)
	a, b, c := tenancytest.FreshTenant(t), tenancytest.FreshTenant(t), tenancytest.FreshTenant(t)
	dA, dB, dC := directTo(t, own3), directTo(t, s2), directTo(t, own4)
	// The servers of A and C are this test's alone: start them empty.
	for _, d := range []direct{dA, dC} {
		d.query("MATCH (n) DETACH DELETE n", nil)
	}
	label := uniqueLabel(t)
	t.Cleanup(func() { dB.removeLabel(label) })
	resolve := serversOf(map[tenancy.ID]testsvc.Neo4jServer{a: own3, b: s2, c: own4})
	var r struct {
		fx.In
		Tenants *modules.Tenants
		Graph   *neo4j.Graph `name:"g"`
	}
	app := fx.New(fx.NopLogger, modules.Lifecycle(),
		neo4j.Module("graph", neo4j.Routed(resolve, routing.Limits{}), modules.AllowTeardown(),
			neo4j.GraphRoute("g", neo4j.RouteConfig{})),
		fx.Populate(&r))
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	for _, id := range []tenancy.ID{a, c} {
		t.Cleanup(func() { _, _ = r.Tenants.Offboard(context.Background(), id) })
	}
	writeGraph(t, r.Graph, tenancy.WithTenant(context.Background(), a), label, "a")
	writeGraph(t, r.Graph, tenancy.WithTenant(context.Background(), b), label, "b")
	archive := tenancytest.CheckRoundTrip(t, tenancytest.RoundTrip{Tenants: r.Tenants, A: a, B: b, C: c, Read: readGraph(r.Graph, label)})
	if !bytes.Contains(archive, []byte(`"family":"nodes","tier":"dedicated","records":3`)) {
		t.Errorf("the archive's manifest lacks A's 3 nodes at dedicated:\n%s", archive)
	}
	if n := dC.count(label); n != 3 {
		t.Errorf("C's server holds %d nodes of the label, want A's 3", n)
	}
	if n := dC.query("MATCH (n) WHERE n."+neo4j.TenantProperty+" IS NOT NULL RETURN count(n)", nil)[0].Values[0].(int64); n != 0 {
		t.Errorf("%d of C's nodes carry a tenant property: a dedicated database stamps none", n)
	}
	if n := dB.count(label); n != 3 {
		t.Errorf("B's server holds %d nodes of the label, want B's 3", n)
	}
	rep, err := r.Tenants.Offboard(context.Background(), c)
	if err != nil {
		t.Fatalf("offboarding C: %v", err)
	}
	tenancytest.RequireVerified(t, rep, "neo4j")
	if n := dC.query("MATCH (n) RETURN count(n)", nil)[0].Values[0].(int64); n != 0 {
		t.Errorf("C's server holds %d nodes after offboarding C", n)
	}
	if n := dA.count(label); n != 3 {
		t.Errorf("A's server holds %d nodes of the label after offboarding C, want A's 3", n)
	}
}
