package postgres

import (
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TestStmtCacheBounded: per-(tenant, route) statements never outgrow the
// bound; overflow clears the cache wholesale.
func TestStmtCacheBounded(t *testing.T) {
	var c stmtCache
	for i := range maxCachedStmts + 10 {
		var b [16]byte
		b[0], b[1], b[15] = byte(i), byte(i>>8), 1
		id, _ := tenancy.IDFromBytes(b)
		c.put(stmtKey{tenant: id, route: "r"}, i)
		if len(c.m) > maxCachedStmts {
			t.Fatalf("cache holds %d entries", len(c.m))
		}
	}
	if len(c.m) != 10 {
		t.Errorf("after overflow the cache holds %d entries, want the 10 put since", len(c.m))
	}
	k := stmtKey{tenant: tenancy.Default, route: "r"}
	c.put(k, "x")
	if v, ok := c.get(k); !ok || v != "x" {
		t.Errorf("get: %v %v", v, ok)
	}
	if _, ok := c.get(stmtKey{tenant: tenancy.Default, route: "other"}); ok {
		t.Error("a route's statements were served to another route")
	}
}
