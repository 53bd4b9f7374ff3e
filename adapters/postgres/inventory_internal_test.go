package postgres

import (
	"slices"
	"testing"
)

// Every relation role of every kind is either one a route writes rows to
// (ownedRoles, which families declares and Teardown and Verify walk) or
// one named here as never written: a new kind's written role missing from
// ownedRoles would leave a tenant's rows after offboarding unseen.
func TestEveryRelationRoleIsDeclared(t *testing.T) {
	notWritten := map[string]string{
		"read":   "a read relation (possibly a view): rows are written through the write role",
		"index":  "a search index over the heap",
		"source": "analytics read their sources",
		"schema": "dynamic reads run SELECTs in the tenant's schema",
	}
	for kind, rule := range Rules().Kinds {
		for _, role := range rule.Relations {
			if !slices.Contains(ownedRoles, role) && notWritten[role] == "" {
				t.Errorf("kind %s: relation role %q is neither in ownedRoles nor declared never written", kind, role)
			}
		}
	}
}
