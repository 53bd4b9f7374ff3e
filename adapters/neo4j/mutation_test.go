package neo4j

// Tests that pin down statement building mutation testing found unchecked
// (make mutate; docs/reliability.md).

import (
	"reflect"
	"strings"
	"testing"
)

// The user's properties reach $props unchanged; no properties is an empty
// map, never nil, so that `$props` is always a map.
func TestPropsReachTheStatement(t *testing.T) {
	b := builder{tagged: true, tenant: "T"}
	props := map[string]any{"name": "x", "n": 1}
	s, err := b.createNode([]string{"P"}, props)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.params["props"], props) {
		t.Errorf("createNode $props = %v, want %v", s.params["props"], props)
	}
	s, err = b.updateNode("4:x:1", props)
	if err != nil || !reflect.DeepEqual(s.params["props"], props) {
		t.Errorf("updateNode $props = %v, %v; want %v", s.params["props"], err, props)
	}
	s, err = b.createRel("4:x:1", "4:x:2", "KNOWS", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := s.params["props"].(map[string]any); !ok || m == nil || len(m) != 0 {
		t.Errorf("createRel with no properties: $props = %#v, want an empty map", s.params["props"])
	}
}

// params pairs its arguments and ignores a dangling key rather than read
// past the end.
func TestParamsPairs(t *testing.T) {
	got := builder{tagged: true, tenant: "T"}.params("a", 1, "b", 2, "dangling")
	want := map[string]any{"a": 1, "b": 2, "tenant": "T"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("params = %v, want %v", got, want)
	}
	if got := (builder{}).params(); len(got) != 0 {
		t.Errorf("untagged params() = %v, want empty", got)
	}
}

// Every depth bound the check names is itself accepted.
func TestTraversalBoundsInclusive(t *testing.T) {
	b := builder{tagged: true, tenant: "T"}
	for _, tr := range []Traversal{
		{MinDepth: 0, MaxDepth: 1, Direction: Outgoing},
		{MinDepth: 8, MaxDepth: 8, Direction: Incoming},
		{MinDepth: 2, MaxDepth: 2, Direction: Both},
	} {
		if _, err := b.traverse("s", tr, 8); err != nil {
			t.Errorf("traversal %+v refused: %v", tr, err)
		}
	}
}

// With no relationship types the pattern names none, not an empty one.
func TestTraversalWithoutTypes(t *testing.T) {
	s, err := builder{}.traverse("s", Traversal{Direction: Outgoing, MinDepth: 1, MaxDepth: 3}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if want := "MATCH p = (s)-[*1..3]->(m) WHERE elementId(s) = $start AND NOT s:TenantwireMigration AND NOT m:TenantwireMigration RETURN p LIMIT $limit"; s.cypher != want {
		t.Errorf("traverse:\n got %s\nwant %s", s.cypher, want)
	}
}

// 'z' is a letter like any other, first or later.
func TestDatabaseNameEdges(t *testing.T) {
	for _, ok := range []string{"zeta", "az09.-z", "abz"} {
		if err := ValidDatabaseName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"{ab", "`ab", "ab{", "ab`", "ab/", "ab:"} {
		if ValidDatabaseName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// An empty or overlong prefix is refused for its length, saying the bound.
func TestValidPrefixSaysTheBound(t *testing.T) {
	for _, p := range []string{"", strings.Repeat("a", maxDatabasePrefix+1)} {
		err := validPrefix(p)
		if err == nil || !strings.Contains(err.Error(), "want 1 to 30 characters") {
			t.Errorf("validPrefix(%q) = %v, want the length bound", p, err)
		}
	}
}

// quote takes names of 1 to 255 bytes; the first printable character is in,
// the last control character out.
func TestQuoteEdges(t *testing.T) {
	if q, err := quote("label", strings.Repeat("L", 255)); err != nil || len(q) != 257 {
		t.Errorf("a 255-byte label: %q, %v", q, err)
	}
	if _, err := quote("label", strings.Repeat("L", 256)); err == nil {
		t.Error("a 256-byte label accepted")
	}
	if q, err := quote("label", " a~"); err != nil || q != "` a~`" {
		t.Errorf("quote(\" a~\") = %q, %v", q, err)
	}
	for _, bad := range []string{"a\x1f", "a\x7f", "a\\"} {
		if _, err := quote("label", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
