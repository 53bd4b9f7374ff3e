package postgres

import (
	"fmt"
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

// The prepared budget: the first preparedSets sets prepare, later ones run
// unprepared, a set built twice keeps its first mode, and a clear counts
// again.
func TestStmtCachePreparedBudget(t *testing.T) {
	var s stmtCache
	key := func(i int) stmtKey {
		return stmtKey{tenant: tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+1)), route: "r"}
	}
	for i := range preparedSets + 1 {
		st := &docStmts{}
		s.put(key(i), st)
		if want := i >= preparedSets; st.unprepared != want {
			t.Fatalf("set %d: unprepared = %v, want %v", i, st.unprepared, want)
		}
	}
	again := &docStmts{}
	s.put(key(preparedSets), again)
	if !again.unprepared {
		t.Fatal("a rebuilt unprepared set became prepared")
	}
	again = &docStmts{}
	s.put(key(0), again)
	if again.unprepared {
		t.Fatal("a rebuilt prepared set became unprepared")
	}
	for i := preparedSets + 1; i < maxCachedStmts; i++ {
		s.put(key(i), &docStmts{})
	}
	fresh := &docStmts{}
	s.put(key(maxCachedStmts), fresh) // clears the full cache first
	if fresh.unprepared {
		t.Fatal("the budget was not renewed when the cache was cleared")
	}
}
