package neo4j

import (
	"fmt"
	"testing"
)

// A ';' inside a name, a string or a comment does not end a statement;
// comments are dropped and empty statements skipped.
func TestSplitStatements(t *testing.T) {
	body := "// one; still a comment\nCREATE INDEX `a;b` IF NOT EXISTS FOR (n:L) ON (n.p);;\n" +
		"/* two; */ CREATE FULLTEXT INDEX f IF NOT EXISTS FOR (n:L) ON EACH [n.q] OPTIONS {indexConfig: {`fulltext.analyzer`: 'x;\\'y'}};\n" +
		"DROP INDEX old IF EXISTS"
	got := fmt.Sprintf("%q", splitStatements(body))
	want := fmt.Sprintf("%q", []string{
		"CREATE INDEX `a;b` IF NOT EXISTS FOR (n:L) ON (n.p)",
		"CREATE FULLTEXT INDEX f IF NOT EXISTS FOR (n:L) ON EACH [n.q] OPTIONS {indexConfig: {`fulltext.analyzer`: 'x;\\'y'}}",
		"DROP INDEX old IF EXISTS",
	})
	if got != want {
		t.Fatalf("split:\n got %s\nwant %s", got, want)
	}
}

func TestHasTenantProperty(t *testing.T) {
	for list, want := range map[string]bool{
		"n.code":                     false,
		"(n.shop, n.code)":           false,
		"(n.tenant_id, n.code)":      true,
		"( n.code , n.`tenant_id` )": true,
		"n.tenant_idx":               false,
		"r.tenant_id":                true,
	} {
		if got := hasTenantProperty(list); got != want {
			t.Errorf("hasTenantProperty(%q) = %v, want %v", list, got, want)
		}
	}
}
