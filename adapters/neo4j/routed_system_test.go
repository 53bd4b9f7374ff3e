package neo4j_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// A found hole: tenant B's credentials named the system database of A's
// server. Its id differs from A's database's, so no claim met A's, and B's
// raw Cypher read and wrote A's graph with USE neo4j. A routed tenant may
// not name the system database.
func TestRoutedSystemDatabaseRefused(t *testing.T) {
	s1 := testsvc.Neo4j(t)
	b := credentials(s1)
	b.Params = map[string]string{"database": "SYSTEM"}
	creds := map[tenancy.ID]routing.Credentials{tenancytest.TenantA: credentials(s1), tenancytest.TenantB: b}
	resolve := func(_ context.Context, id tenancy.ID) (routing.Credentials, error) {
		if c, ok := creds[id]; ok {
			return c, nil
		}
		return routing.Credentials{}, fmt.Errorf("unknown tenant %s", id)
	}
	raw := start[*neo4j.RawCypher](t, "raw", neo4j.Routed(resolve, routing.Limits{}), neo4j.RawCypherRoute("raw", neo4j.RouteConfig{}))
	label := uniqueLabel(t)
	d1 := directTo(t, s1)
	t.Cleanup(func() { d1.removeLabel(label) })
	if _, err := raw.Write(srvA, "CREATE (n:`"+label+"` {k: 'secret'})", nil); err != nil {
		t.Fatal(err)
	}
	rows, err := raw.Read(srvB, "USE neo4j MATCH (n:`"+label+"`) RETURN n.k AS k", nil)
	if err == nil || !strings.Contains(err.Error(), "system database") {
		t.Errorf("B on the system database of A's server read A's graph: %v %v", rows, err)
	}
	rows, err = raw.Write(srvB, "USE neo4j CREATE (n:`"+label+"` {k: 'fromB'}) RETURN n.k AS k", nil)
	if err == nil {
		t.Errorf("B on the system database of A's server wrote into A's graph: %v", rows)
	}
	if n := d1.count(label); n != 1 {
		t.Fatalf("A's database holds %d nodes of the label, want only A's", n)
	}
}
