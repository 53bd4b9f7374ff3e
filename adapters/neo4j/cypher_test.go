package neo4j

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

var (
	// A pattern node opens with "(" not preceded by a name character (that
	// would be a function call such as elementId(n) or nodes(p)).
	nodeElem = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])\((\w*)[:\s)]`)
	relElem  = regexp.MustCompile(`\[(\w*)[:*\]\s]`)
	pathVar  = regexp.MustCompile(`MATCH (\w+) = `)
)

// uncovered inspects a built statement and returns every node and
// relationship of its patterns that carries neither the tenant predicate
// nor the tenant stamp: named elements need `v.tenant_id = $tenant`;
// anonymous ones (a variable-length hop) must lie on a named path whose
// nodes and relationships are all checked.
func uncovered(q string) []string {
	var bad []string
	var anon bool
	check := func(kind, v string) {
		if v == "" {
			anon = true
			return
		}
		if !strings.Contains(q, v+"."+TenantProperty+" = $tenant") {
			bad = append(bad, kind+" "+v)
		}
	}
	for _, m := range nodeElem.FindAllStringSubmatch(q, -1) {
		check("node", m[1])
	}
	for _, m := range relElem.FindAllStringSubmatch(q, -1) {
		check("relationship", m[1])
	}
	if anon {
		p := pathVar.FindStringSubmatch(q)
		if p == nil ||
			!strings.Contains(q, "all(x IN nodes("+p[1]+") WHERE x."+TenantProperty+" = $tenant)") ||
			!strings.Contains(q, "all(x IN relationships("+p[1]+") WHERE x."+TenantProperty+" = $tenant)") {
			bad = append(bad, "anonymous element outside a fully checked path")
		}
	}
	return bad
}

// everyStatement builds one of each statement the graph route issues.
func everyStatement(t *testing.T, b builder) map[string]stmt {
	t.Helper()
	must := func(s stmt, err error) stmt {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	props := map[string]any{"name": "ada", "age": 3, "gone": nil}
	out := map[string]stmt{
		"createNode":   must(b.createNode([]string{"Person", "Admin"}, props)),
		"getNode":      b.getNode("4:x:1"),
		"updateNode":   must(b.updateNode("4:x:1", props)),
		"deleteNode":   b.deleteNode("4:x:1"),
		"matchNodes":   must(b.matchNodes([]string{"Person"}, props, "RETURN n LIMIT $limit", "limit", 10)),
		"countNodes":   must(b.matchNodes(nil, nil, "RETURN count(n) AS n")),
		"createRel":    must(b.createRel("4:x:1", "4:x:2", "KNOWS", props)),
		"getRel":       b.getRel("5:x:1"),
		"updateRel":    must(b.updateRel("5:x:1", props)),
		"deleteRel":    b.deleteRel("5:x:1"),
		"matchRels":    must(b.matchRels("KNOWS", props, 10)),
		"matchAnyRels": must(b.matchRels("", nil, 10)),
	}
	for i, tr := range []Traversal{
		{Types: []string{"KNOWS", "LIKES"}, Direction: Outgoing, MinDepth: 1, MaxDepth: 3, EndLabels: []string{"Person"}},
		{Direction: Incoming, MaxDepth: 2},
		{Direction: Both, MinDepth: 0, MaxDepth: 8},
	} {
		out["traverse"+string(rune('0'+i))] = must(b.traverse("4:x:1", tr, DefaultMaxDepth))
	}
	return out
}

// At tagged, every node and relationship variable of every statement the
// route builds carries the tenant predicate (or stamp), and $tenant is the
// scope's tenant.
func TestTaggedPredicateOnEveryPatternElement(t *testing.T) {
	const tenant = "0a0a0a0a-0000-4000-8000-00000000000a"
	for name, s := range everyStatement(t, builder{tagged: true, tenant: tenant}) {
		if bad := uncovered(s.cypher); len(bad) > 0 {
			t.Errorf("%s: %v without the tenant predicate in %q", name, bad, s.cypher)
		}
		if n := len(nodeElem.FindAllString(s.cypher, -1)); n == 0 {
			t.Errorf("%s: inspector found no pattern in %q", name, s.cypher)
		}
		if s.params["tenant"] != tenant {
			t.Errorf("%s: $tenant = %v", name, s.params["tenant"])
		}
	}
}

// The inspector itself catches a missing predicate on any element, so the
// test above cannot pass vacuously.
func TestInspectorCatchesMissingPredicates(t *testing.T) {
	for _, q := range []string{
		"MATCH (a)-[r]->(b) WHERE a.tenant_id = $tenant AND r.tenant_id = $tenant RETURN r",
		"MATCH (n)-[]->(m) WHERE n.tenant_id = $tenant AND m.tenant_id = $tenant RETURN n",
		"MATCH p = (s)-[:T*1..3]->(m) WHERE s.tenant_id = $tenant AND m.tenant_id = $tenant AND all(x IN nodes(p) WHERE x.tenant_id = $tenant) RETURN p",
		"CREATE (n:`A` $props) RETURN n",
	} {
		if len(uncovered(q)) == 0 {
			t.Errorf("inspector passed %q", q)
		}
	}
}

// Off tagged (namespace, dedicated, none) the statements carry no tenant
// marker at all: the container is the boundary.
func TestUntaggedStatementsCarryNoMarker(t *testing.T) {
	for name, s := range everyStatement(t, builder{}) {
		if strings.Contains(s.cypher, TenantProperty) || s.params["tenant"] != nil {
			t.Errorf("%s: untagged statement mentions the tenant: %q %v", name, s.cypher, s.params)
		}
	}
}

func TestExactStatements(t *testing.T) {
	b := builder{tagged: true, tenant: "T"}
	s, err := b.createNode([]string{"Per`son"}, map[string]any{"name": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "CREATE (n:`Per``son` $props) SET n.tenant_id = $tenant RETURN n"; s.cypher != want {
		t.Errorf("createNode:\n got %s\nwant %s", s.cypher, want)
	}
	s, _ = b.matchNodes([]string{"P"}, map[string]any{"b": 2, "a": "1", "c": nil}, "RETURN n LIMIT $limit", "limit", 5)
	if want := "MATCH (n:`P`) WHERE n.`a` = $p0 AND n.`b` = $p1 AND n.`c` IS NULL AND n.tenant_id = $tenant RETURN n LIMIT $limit"; s.cypher != want {
		t.Errorf("matchNodes:\n got %s\nwant %s", s.cypher, want)
	}
	if s.params["p0"] != "1" || s.params["p1"] != 2 || s.params["limit"] != 5 || s.params["tenant"] != "T" || len(s.params) != 4 {
		t.Errorf("matchNodes params %v", s.params)
	}
	s, _ = b.traverse("4:x:1", Traversal{Types: []string{"KNOWS"}, Direction: Outgoing, MinDepth: 1, MaxDepth: 3}, 8)
	if want := "MATCH p = (s)-[:`KNOWS`*1..3]->(m) WHERE elementId(s) = $start AND s.tenant_id = $tenant AND m.tenant_id = $tenant" +
		" AND all(x IN nodes(p) WHERE x.tenant_id = $tenant) AND all(x IN relationships(p) WHERE x.tenant_id = $tenant) RETURN p LIMIT $limit"; s.cypher != want {
		t.Errorf("traverse:\n got %s\nwant %s", s.cypher, want)
	}
	s = b.deleteNode("4:x:1")
	if want := "MATCH (n) WHERE elementId(n) = $id AND n.tenant_id = $tenant OPTIONAL MATCH (n)-[r]-(m) WHERE r.tenant_id = $tenant AND m.tenant_id = $tenant" +
		" DELETE r WITH DISTINCT n DELETE n RETURN count(*) AS deleted"; s.cypher != want {
		t.Errorf("deleteNode:\n got %s\nwant %s", s.cypher, want)
	}
	s, _ = b.createRel("4:x:1", "4:x:2", "KNOWS", nil)
	if want := "MATCH (a), (b) WHERE elementId(a) = $from AND elementId(b) = $to AND a.tenant_id = $tenant AND b.tenant_id = $tenant" +
		" CREATE (a)-[r:`KNOWS` $props]->(b) SET r.tenant_id = $tenant RETURN r"; s.cypher != want {
		t.Errorf("createRel:\n got %s\nwant %s", s.cypher, want)
	}
}

// Values never enter the text; names are quoted or refused.
func TestValuesAreParametersAndNamesAreQuoted(t *testing.T) {
	b := builder{tagged: true, tenant: "T"}
	evil := "x' OR 1=1 //"
	s, err := b.matchNodes([]string{"L"}, map[string]any{"k": evil}, "RETURN n")
	if err != nil || strings.Contains(s.cypher, evil) {
		t.Fatalf("value in text: %q %v", s.cypher, err)
	}
	s, err = b.matchNodes([]string{"A`) MATCH (x"}, nil, "RETURN n")
	if err != nil || !strings.Contains(s.cypher, "(n:`A``) MATCH (x`)") {
		t.Fatalf("label not quoted: %q %v", s.cypher, err)
	}
	for _, bad := range []string{"", `a\u0060b`, "a\x00b", "a\nb", string([]byte{0xff})} {
		if _, err := b.createNode([]string{bad}, nil); err == nil {
			t.Errorf("label %q accepted", bad)
		}
		if _, err := b.createRel("a", "b", bad, nil); err == nil {
			t.Errorf("type %q accepted", bad)
		}
		if _, err := b.matchNodes(nil, map[string]any{bad: 1}, "RETURN n"); err == nil {
			t.Errorf("property key %q accepted", bad)
		}
	}
	// The tenant marker is the adapter's: no write or match may name it.
	if _, err := b.createNode(nil, map[string]any{TenantProperty: "B"}); err == nil {
		t.Error("create with the tenant property accepted")
	}
	if _, err := b.updateRel("r", map[string]any{TenantProperty: "B"}); err == nil {
		t.Error("update with the tenant property accepted")
	}
	if _, err := b.matchNodes(nil, map[string]any{TenantProperty: "B"}, "RETURN n"); err == nil {
		t.Error("match on the tenant property accepted")
	}
}

func TestTraversalBounds(t *testing.T) {
	b := builder{tagged: true, tenant: "T"}
	for _, tr := range []Traversal{
		{MaxDepth: 0}, {MinDepth: -1, MaxDepth: 2}, {MinDepth: 3, MaxDepth: 2}, {MaxDepth: 9}, {MaxDepth: 2, Direction: 7},
	} {
		if _, err := b.traverse("s", tr, 8); err == nil {
			t.Errorf("traversal %+v accepted", tr)
		}
	}
}

// Off tagged, every named node a statement matches carries the history
// guard, so no route on a database the migration history shares can read,
// match or change a history node (a created node's labels are checked
// instead).
func TestUntaggedNodesExcludeHistory(t *testing.T) {
	for name, s := range everyStatement(t, builder{}) {
		if strings.HasPrefix(s.cypher, "CREATE ") {
			continue
		}
		for _, m := range nodeElem.FindAllStringSubmatch(s.cypher, -1) {
			if v := m[1]; v != "" && !strings.Contains(s.cypher, "NOT "+v+":"+historyLabel) {
				t.Errorf("%s: node %s without the history guard in %q", name, v, s.cypher)
			}
		}
	}
}

// The framework's labels and relationship types, and the tenant property,
// are refused on every statement that could name them, with a coded
// error naming the module and route; nothing is built.
func TestReservedNamesRefused(t *testing.T) {
	for _, b := range []builder{{tagged: true, tenant: "T", module: "m", route: "g"}, {module: "m", route: "g"}} {
		for _, label := range []string{historyLabel, "tenantwire_x", "TENANTWIREMIGRATION"} {
			refused := map[string]error{}
			_, refused["createNode"] = b.createNode([]string{"Person", label}, nil)
			_, refused["matchNodes"] = b.matchNodes([]string{label}, nil, "RETURN n")
			_, refused["traverse end"] = b.traverse("s", Traversal{MaxDepth: 1, EndLabels: []string{label}}, 8)
			_, refused["traverse type"] = b.traverse("s", Traversal{MaxDepth: 1, Types: []string{"KNOWS", label}}, 8)
			_, refused["createRel"] = b.createRel("a", "b", label, nil)
			_, refused["matchRels"] = b.matchRels(label, nil, 10)
			_, refused["tenant property"] = b.createNode(nil, map[string]any{TenantProperty: "B"})
			_, refused["match tenant property"] = b.matchNodes(nil, map[string]any{TenantProperty: "B"}, "RETURN n")
			_, refused["update tenant property"] = b.updateNode("n", map[string]any{TenantProperty: "B"})
			for op, err := range refused {
				var e *tenancy.Error
				if !errors.As(err, &e) || e.Code != tenancy.CodeReservedName || e.Module != "m" || e.Route != "g" || e.Backend != "neo4j" || e.Fix == "" {
					t.Errorf("tagged=%v %s with %q: %v, want reserved_name", b.tagged, op, label, err)
				}
			}
		}
	}
}
