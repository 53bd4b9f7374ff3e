package neo4j_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantwire/tenantwire/adapters/neo4j"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// Every graph operation and option against the real server, tagged: the
// statements the unit tests inspect must also be Cypher the server runs,
// with the results the route promises.

var (
	srvA = tenancy.WithTenant(context.Background(), tenancytest.TenantA)
	srvB = tenancy.WithTenant(context.Background(), tenancytest.TenantB)
)

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// tagged is a tagged route on the first server and a label of the test's
// own, removed (with whatever any tenant wrote under it) at clean-up.
func tagged(t *testing.T) (*neo4j.Graph, string) {
	s := testsvc.Neo4j(t)
	g := graph(t, "g", connect(s), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true}))
	label := uniqueLabel(t)
	d := directTo(t, s)
	t.Cleanup(func() { d.removeLabel(label) })
	return g, label
}

// A chain a -> b -> c with an extra c -> a, all A's, and B's own node d
// linked from nothing of A's.
func TestServerTraversalDirectionsAndBounds(t *testing.T) {
	g, label := tagged(t)
	node := func(k string, labels ...string) string {
		return must[neo4j.Node](t)(g.CreateNode(srvA, append([]string{label}, labels...), map[string]any{"k": k})).ID
	}
	a, b, c := node("a"), node("b", "End"), node("c")
	link := func(from, to, typ string) {
		must[neo4j.Relationship](t)(g.CreateRelationship(srvA, from, to, typ, nil))
	}
	link(a, b, "NEXT")
	link(b, c, "NEXT")
	link(c, a, "BACK")
	ends := func(start string, tr neo4j.Traversal) []string {
		t.Helper()
		paths := must[[]neo4j.Path](t)(g.Traverse(srvA, start, tr))
		var out []string
		for _, p := range paths {
			if len(p.Nodes) != len(p.Relationships)+1 || p.Nodes[0].ID != start {
				t.Fatalf("malformed path %+v", p)
			}
			var ks []string
			for _, n := range p.Nodes {
				ks = append(ks, fmt.Sprint(n.Props["k"]))
			}
			out = append(out, strings.Join(ks, ""))
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name  string
		start string
		tr    neo4j.Traversal
		want  []string
	}{
		{"outgoing any type, 0..2", a, neo4j.Traversal{MaxDepth: 2}, []string{"a", "ab", "abc"}},
		{"outgoing NEXT only, 1..3", a, neo4j.Traversal{Types: []string{"NEXT"}, MinDepth: 1, MaxDepth: 3}, []string{"ab", "abc"}},
		{"incoming, 1..1", a, neo4j.Traversal{Direction: neo4j.Incoming, MinDepth: 1, MaxDepth: 1}, []string{"ac"}},
		{"both, exactly 1", b, neo4j.Traversal{Direction: neo4j.Both, MinDepth: 1, MaxDepth: 1}, []string{"ba", "bc"}},
		{"two types, end label", c, neo4j.Traversal{Types: []string{"NEXT", "BACK"}, MinDepth: 1, MaxDepth: 3, EndLabels: []string{"End"}}, []string{"cab"}},
		{"limit", a, neo4j.Traversal{MaxDepth: 3, Limit: 2}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ends(tc.start, tc.tr)
			if tc.name == "limit" {
				if len(got) != 2 {
					t.Fatalf("limit 2 returned %v", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("paths %v, want %v", got, tc.want)
			}
		})
	}
	// B's node linked from a node of B's: B's traversal from A's start is
	// empty, and A's traversal never reaches B's elements.
	d := must[neo4j.Node](t)(g.CreateNode(srvB, []string{label}, map[string]any{"k": "d"}))
	if got := must[[]neo4j.Path](t)(g.Traverse(srvB, a, neo4j.Traversal{Direction: neo4j.Both, MaxDepth: 3})); len(got) != 0 {
		t.Fatalf("B traversed from A's node: %d paths", len(got))
	}
	if got := must[[]neo4j.Path](t)(g.Traverse(srvA, d.ID, neo4j.Traversal{MaxDepth: 1})); len(got) != 0 {
		t.Fatalf("A traversed from B's node: %d paths", len(got))
	}
}

// A path through another tenant's node or relationship is cut there: the
// predicate holds for the whole path, not only its ends. The foreign
// elements are written past the adapter (nothing the route builds can
// link two tenants' nodes), as another writer on the database could.
func TestServerTraversalStopsAtForeignElements(t *testing.T) {
	g, label := tagged(t)
	s := testsvc.Neo4j(t)
	d := directTo(t, s)
	a := must[neo4j.Node](t)(g.CreateNode(srvA, []string{label}, map[string]any{"k": "a"}))
	c := must[neo4j.Node](t)(g.CreateNode(srvA, []string{label}, map[string]any{"k": "c"}))
	// a -> (B's node) -> c, and a -[B's relationship]-> c.
	d.query("MATCH (a), (c) WHERE elementId(a) = $a AND elementId(c) = $c "+
		"CREATE (a)-[:HOP {tenant_id: $ta}]->(:`"+label+"` {k: 'b', tenant_id: $tb})-[:HOP {tenant_id: $ta}]->(c) "+
		"CREATE (a)-[:HOP {tenant_id: $tb}]->(c)",
		map[string]any{"a": a.ID, "c": c.ID, "ta": tenancytest.TenantA.String(), "tb": tenancytest.TenantB.String()})
	if paths := must[[]neo4j.Path](t)(g.Traverse(srvA, a.ID, neo4j.Traversal{MinDepth: 1, MaxDepth: 2})); len(paths) != 0 {
		t.Fatalf("A's traversal crossed B's elements: %+v", paths)
	}
	// The direct check: the server does hold those paths.
	if n := d.query("MATCH p = (a)-[*1..2]->(c) WHERE elementId(a) = $a RETURN count(p)", map[string]any{"a": a.ID})[0].Values[0]; n != int64(3) {
		t.Fatalf("the server holds %v paths, want 3", n)
	}
	// Deleting a, with B's relationships attached, fails and changes nothing.
	if err := g.DeleteNode(srvA, a.ID); err == nil {
		t.Fatal("deleting a node with another tenant's relationships attached succeeded")
	}
	if _, err := g.GetNode(srvA, a.ID); err != nil {
		t.Fatalf("the failed delete removed the node: %v", err)
	}
	if n := d.query("MATCH (a)-[r]-() WHERE elementId(a) = $a RETURN count(r)", map[string]any{"a": a.ID})[0].Values[0]; n != int64(2) {
		t.Fatalf("the failed delete left %v relationships on a, want 2", n)
	}
}

// Node and relationship CRUD, property matching and the value mapping.
func TestServerPropertiesAndMatching(t *testing.T) {
	g, label := tagged(t)
	props := map[string]any{"s": "x", "i": 7, "f": 1.5, "b": true, "list": []string{"p", "q"}, "gone": "soon"}
	n := must[neo4j.Node](t)(g.CreateNode(srvA, []string{label, "Second"}, props))
	want := map[string]any{"s": "x", "i": int64(7), "f": 1.5, "b": true, "list": []any{"p", "q"}, "gone": "soon"}
	if !reflect.DeepEqual(n.Props, want) {
		t.Fatalf("created props %#v, want %#v", n.Props, want)
	}
	if slices.Sort(n.Labels); !reflect.DeepEqual(n.Labels, slices.Sorted(slices.Values([]string{label, "Second"}))) {
		t.Fatalf("labels %v", n.Labels)
	}
	other := must[neo4j.Node](t)(g.CreateNode(srvA, []string{label}, map[string]any{"s": "y"}))

	// A nil value in an update removes the property; a nil value in a
	// match matches a missing one.
	u := must[neo4j.Node](t)(g.UpdateNode(srvA, n.ID, map[string]any{"gone": nil, "i": 8}))
	if _, ok := u.Props["gone"]; ok || u.Props["i"] != int64(8) || u.Props["s"] != "x" {
		t.Fatalf("updated props %#v", u.Props)
	}
	count := func(p map[string]any) int {
		t.Helper()
		return must[int](t)(g.CountNodes(srvA, []string{label}, p))
	}
	for _, tc := range []struct {
		p    map[string]any
		want int
	}{
		{nil, 2},
		{map[string]any{"s": "x"}, 1},
		{map[string]any{"s": "x", "i": 8, "b": true}, 1},
		{map[string]any{"s": "x", "i": 7}, 0},
		{map[string]any{"gone": nil}, 2},
		{map[string]any{"b": nil}, 1},
	} {
		if got := count(tc.p); got != tc.want {
			t.Errorf("count %v: %d, want %d", tc.p, got, tc.want)
		}
	}
	if got := must[[]neo4j.Node](t)(g.MatchNodes(srvA, []string{label}, nil, 1)); len(got) != 1 {
		t.Errorf("match with limit 1: %d nodes", len(got))
	}
	if got := must[[]neo4j.Node](t)(g.MatchNodes(srvA, []string{label, "Second"}, nil, 0)); len(got) != 1 || got[0].ID != n.ID {
		t.Errorf("match on two labels: %+v", got)
	}

	r := must[neo4j.Relationship](t)(g.CreateRelationship(srvA, n.ID, other.ID, "REL", map[string]any{"w": 1}))
	if r.From != n.ID || r.To != other.ID || r.Type != "REL" || r.Props["w"] != int64(1) {
		t.Fatalf("relationship %+v", r)
	}
	ur := must[neo4j.Relationship](t)(g.UpdateRelationship(srvA, r.ID, map[string]any{"w": nil, "v": "x"}))
	if !reflect.DeepEqual(ur.Props, map[string]any{"v": "x"}) {
		t.Fatalf("updated relationship props %#v", ur.Props)
	}
	if got := must[[]neo4j.Relationship](t)(g.MatchRelationships(srvA, "", map[string]any{"v": "x"}, 0)); len(got) != 1 || got[0].ID != r.ID {
		t.Fatalf("match relationships by property: %+v", got)
	}
	if got := must[neo4j.Relationship](t)(g.GetRelationship(srvA, r.ID)); got.ID != r.ID {
		t.Fatalf("get relationship %+v", got)
	}
	if err := g.DeleteRelationship(srvA, r.ID); err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteRelationship(srvA, r.ID); !errors.Is(err, neo4j.ErrNotFound) {
		t.Fatalf("deleting a deleted relationship: %v", err)
	}
	// Deleting a node deletes the tenant's relationships with it, a
	// self-loop included.
	must[neo4j.Relationship](t)(g.CreateRelationship(srvA, n.ID, other.ID, "REL", nil))
	must[neo4j.Relationship](t)(g.CreateRelationship(srvA, n.ID, n.ID, "SELF", nil))
	if err := g.DeleteNode(srvA, n.ID); err != nil {
		t.Fatalf("delete node with its own relationships: %v", err)
	}
	if got := count(nil); got != 1 {
		t.Fatalf("%d nodes left, want 1", got)
	}
	if err := g.DeleteNode(srvA, n.ID); !errors.Is(err, neo4j.ErrNotFound) {
		t.Fatalf("deleting a deleted node: %v", err)
	}
}

// Ids the server never issued, or of the other kind, are not found, never
// a server error.
func TestServerUnknownIDsAreNotFound(t *testing.T) {
	g, label := tagged(t)
	n := must[neo4j.Node](t)(g.CreateNode(srvA, []string{label}, nil))
	m := must[neo4j.Node](t)(g.CreateNode(srvA, []string{label}, nil))
	r := must[neo4j.Relationship](t)(g.CreateRelationship(srvA, n.ID, m.ID, "R", nil))
	for _, id := range []string{"", "garbage", "4:00000000-0000-0000-0000-000000000000:1", r.ID} {
		if _, err := g.GetNode(srvA, id); !errors.Is(err, neo4j.ErrNotFound) {
			t.Errorf("GetNode(%q): %v, want ErrNotFound", id, err)
		}
	}
	if _, err := g.GetRelationship(srvA, n.ID); !errors.Is(err, neo4j.ErrNotFound) {
		t.Errorf("GetRelationship(node id): %v, want ErrNotFound", err)
	}
	if _, err := g.CreateRelationship(srvA, n.ID, "garbage", "R", nil); !errors.Is(err, neo4j.ErrNotFound) {
		t.Errorf("link to an unknown id: %v, want ErrNotFound", err)
	}
}

// Names that read as Cypher are labels, types and keys on the server: the
// quoting holds against the real parser, and the data round-trips.
func TestServerHostileNamesAreQuoted(t *testing.T) {
	g, label := tagged(t)
	hostile := label + "`) DETACH DELETE (x"
	key := "k` = 1 OR true //"
	n := must[neo4j.Node](t)(g.CreateNode(srvA, []string{label, hostile}, map[string]any{key: "v", "ünï cødé": 1}))
	if !slices.Contains(n.Labels, hostile) || n.Props[key] != "v" || n.Props["ünï cødé"] != int64(1) {
		t.Fatalf("round trip: %+v", n)
	}
	got := must[[]neo4j.Node](t)(g.MatchNodes(srvA, []string{hostile}, map[string]any{key: "v"}, 0))
	if len(got) != 1 || got[0].ID != n.ID {
		t.Fatalf("match by hostile names: %+v", got)
	}
	typ := "T`]->() DELETE r //"
	r := must[neo4j.Relationship](t)(g.CreateRelationship(srvA, n.ID, n.ID, typ, nil))
	if r.Type != typ {
		t.Fatalf("relationship type %q", r.Type)
	}
	if p := must[[]neo4j.Path](t)(g.Traverse(srvA, n.ID, neo4j.Traversal{Types: []string{typ}, MinDepth: 1, MaxDepth: 1})); len(p) != 1 {
		t.Fatalf("traversal over a hostile type: %d paths", len(p))
	}
	// The tenant marker is the adapter's: refused as a user key.
	if _, err := g.CreateNode(srvA, []string{label}, map[string]any{neo4j.TenantProperty: tenancytest.TenantB.String()}); err == nil {
		t.Fatal("a user property named tenant_id was written")
	}
}

// A transaction runs several calls atomically: an error rolls all back.
func TestServerTransactions(t *testing.T) {
	g, label := tagged(t)
	boom := errors.New("boom")
	err := g.Write(srvA, func(ctx context.Context, tx neo4j.Ops) error {
		a, err := tx.CreateNode(ctx, []string{label}, nil)
		if err != nil {
			return err
		}
		b, err := tx.CreateNode(ctx, []string{label}, nil)
		if err != nil {
			return err
		}
		if _, err := tx.CreateRelationship(ctx, a.ID, b.ID, "R", nil); err != nil {
			return err
		}
		if n, err := tx.CountNodes(ctx, []string{label}, nil); err != nil || n != 2 {
			return fmt.Errorf("inside the transaction: %d nodes, %v", n, err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("write: %v", err)
	}
	if n := must[int](t)(g.CountNodes(srvA, []string{label}, nil)); n != 0 {
		t.Fatalf("a failed transaction left %d nodes", n)
	}
	var id string
	if err := g.Write(srvA, func(ctx context.Context, tx neo4j.Ops) error {
		n, err := tx.CreateNode(ctx, []string{label}, nil)
		id = n.ID
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := g.Read(srvA, func(ctx context.Context, tx neo4j.Ops) error {
		_, err := tx.GetNode(ctx, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// The raw hatch on a routed driver: each tenant's text runs on its own
// server, a write inside Read is refused by the server, and a tenant
// without credentials is served by no server.
func TestServerRawCypher(t *testing.T) {
	s1, s2 := testsvc.Neo4j(t), testsvc.Neo4jSecond(t)
	resolve := aOnFirstBOnSecond(s1, s2)
	raw := start[*neo4j.RawCypher](t, "raw", neo4j.Routed(resolve, routing.Limits{}), neo4j.RawCypherRoute("raw", neo4j.RouteConfig{}))
	label := uniqueLabel(t)
	d1, d2 := directTo(t, s1), directTo(t, s2)
	t.Cleanup(func() { d1.removeLabel(label); d2.removeLabel(label) })

	create := "CREATE (n:`" + label + "` {k: $k, n: $n}) RETURN elementId(n) AS id, n.k AS k"
	rows, err := raw.Write(srvA, create, map[string]any{"k": "a", "n": 1})
	if err != nil || len(rows) != 1 || rows[0]["k"] != "a" || rows[0]["id"] == "" {
		t.Fatalf("raw write under A: %v %v", rows, err)
	}
	read := "MATCH (n:`" + label + "`) RETURN n.k AS k ORDER BY k"
	if rows, err := raw.Read(srvA, read, nil); err != nil || len(rows) != 1 || rows[0]["k"] != "a" {
		t.Fatalf("A reads its own raw write: %v %v", rows, err)
	}
	if rows, err := raw.Read(srvB, read, nil); err != nil || len(rows) != 0 {
		t.Fatalf("B's raw read on its own server: %v %v", rows, err)
	}
	if rows, err := raw.Write(srvB, "MATCH (n:`"+label+"`) DETACH DELETE n RETURN count(*) AS c", nil); err != nil || rows[0]["c"] != int64(0) {
		t.Fatalf("B's raw delete: %v %v", rows, err)
	}
	if n1, n2 := d1.count(label), d2.count(label); n1 != 1 || n2 != 0 {
		t.Fatalf("servers hold %d and %d nodes, want 1 (A's) and 0", n1, n2)
	}
	// A write in a read transaction: the server refuses it.
	if _, err := raw.Read(srvA, create, map[string]any{"k": "r", "n": 2}); err == nil {
		t.Fatal("a raw write inside Read succeeded")
	}
	if n := d1.count(label); n != 1 {
		t.Fatalf("the refused write left %d nodes", n)
	}
	other := tenancy.WithTenant(context.Background(), tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c"))
	if _, err := raw.Read(other, read, nil); err == nil {
		t.Fatal("a tenant without credentials was served")
	}
	if _, err := raw.Read(context.Background(), read, nil); tenancy.CodeOf(err) != tenancy.CodeTenantUnbound {
		t.Fatalf("unbound raw read: %v", err)
	}
}

// Tenants calling at once, several calls each, on fresh drivers' first
// connections, each see exactly their own writes, never a neighbour's:
// four tenants tagged on one driver, and two dedicated ones on two servers.
// Under -race this also shows that concurrent first connections on one
// driver are not a data race.
func TestServerConcurrentTenants(t *testing.T) {
	s1, s2 := testsvc.Neo4j(t), testsvc.Neo4jSecond(t)
	tenants := []tenancy.ID{tenancytest.TenantA, tenancytest.TenantB,
		tenancy.MustParseID("0c0c0c0c-0000-4000-8000-00000000000c"), tenancy.MustParseID("0d0d0d0d-0000-4000-8000-00000000000d")}
	resolve := aOnFirstBOnSecond(s1, s2)
	for _, tc := range []struct {
		name    string
		tenants []tenancy.ID
		opts    []neo4j.Option
	}{
		{"tagged", tenants, []neo4j.Option{connect(s1), neo4j.GraphRoute("g", neo4j.RouteConfig{TenantAware: true})}},
		{"dedicated", tenants[:2], []neo4j.Option{neo4j.Routed(resolve, routing.Limits{}), neo4j.GraphRoute("g", neo4j.RouteConfig{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := graph(t, "g", tc.opts...)
			label := uniqueLabel(t)
			t.Cleanup(func() { directTo(t, s1).removeLabel(label); directTo(t, s2).removeLabel(label) })
			concurrentTenants(t, g, label, tc.tenants)
		})
	}
}

// concurrentTenants runs workers goroutines per tenant, all at once.
func concurrentTenants(t *testing.T, g *neo4j.Graph, label string, tenants []tenancy.ID) {
	const workers, perWorker = 3, 4
	var wg sync.WaitGroup
	for i, id := range tenants {
		ctx := tenancy.WithTenant(context.Background(), id)
		for w := range workers {
			wg.Go(func() {
				for j := range perWorker {
					if _, err := g.CreateNode(ctx, []string{label}, map[string]any{"owner": i, "w": w, "j": j}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for i, id := range tenants {
		nodes, err := g.MatchNodes(tenancy.WithTenant(context.Background(), id), []string{label}, nil, 0)
		if err != nil || len(nodes) != workers*perWorker {
			t.Errorf("tenant %d sees %d nodes (%v), want its own %d", i, len(nodes), err, workers*perWorker)
		}
		for _, n := range nodes {
			if n.Props["owner"] != int64(i) {
				t.Errorf("tenant %d sees tenant %v's node", i, n.Props["owner"])
			}
		}
	}
}

// A call whose context ends mid-statement returns an error and leaves the
// tenant's driver usable: its connection goes back to the pool or is
// closed, never leaked (the pool here holds two).
func TestServerCancelledCallsDoNotLeakConnections(t *testing.T) {
	s := testsvc.Neo4j(t)
	resolve := func(context.Context, tenancy.ID) (routing.Credentials, error) { return credentials(s), nil }
	raw := start[*neo4j.RawCypher](t, "raw", neo4j.Routed(resolve, routing.Limits{MaxConnsPerClient: 2}), neo4j.RawCypherRoute("raw", neo4j.RouteConfig{}))
	slow := "UNWIND range(1, 100000000) AS x RETURN count(x) AS c"
	for range 6 {
		ctx, cancel := context.WithTimeout(srvA, 50*time.Millisecond)
		_, err := raw.Read(ctx, slow, nil)
		cancel()
		if err == nil {
			t.Fatal("a 100M-row count finished within 50ms")
		}
	}
	ctx, cancel := context.WithTimeout(srvA, 20*time.Second)
	defer cancel()
	rows, err := raw.Read(ctx, "RETURN 1 AS one", nil)
	if err != nil || len(rows) != 1 || rows[0]["one"] != int64(1) {
		t.Fatalf("after cancelled calls: %v %v", rows, err)
	}
}
