package neo4j

import (
	"testing"

	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// TestRoutedModuleDatabaseIsTheIdentified (found hole, fixed): with
// Database("shared") on a routed module, tenant A's credentials name no
// database, so its sessions open "shared"; tenant B's name "shared" on
// the same server. A's identity was read for the server's default
// database, B's for "shared": two identities, two names, both tenants
// served in one database. The identity and the name are now those of the
// database the sessions open, so B is refused. A recording driver stands
// in for the server: a Community server has one user database, so the
// two databases this needs exist only on Enterprise.
func TestRoutedModuleDatabaseIsTheIdentified(t *testing.T) {
	rec := &recorder{}
	resolve := routedTo(map[tenancy.ID]routing.Credentials{
		tA: {Endpoint: "bolt://h:7687"},
		tB: {Endpoint: "bolt://h:7687", Params: map[string]string{"database": "shared"}},
	})
	g := build[*Graph](t, "g", withFakeRouted(rec), Routed(resolve, routing.Limits{}), Database("shared"), GraphRoute("g", RouteConfig{}))
	if _, err := g.CountNodes(ctxA, []string{"X"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := g.CountNodes(ctxB, []string{"X"}, nil); tenancy.CodeOf(err) != tenancy.CodeDedicatedTargetShared {
		t.Fatalf("B on the database A's sessions open: %v, sessions %v", err, rec.opened())
	}
	for _, s := range rec.opened() {
		if s != "bolt://h:7687/shared" {
			t.Errorf("session %s", s)
		}
	}
	if n := len(rec.opened()); n != 1 {
		t.Fatalf("%d sessions opened, want A's one: %v", n, rec.opened())
	}
}
