package postgres

import (
	"fmt"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

func cacheKey(i int) stmtKey {
	return stmtKey{tenant: tenancy.MustParseID(fmt.Sprintf("00000000-0000-4000-8000-%012x", i+1)), route: "r"}
}

// TestStmtCacheBounded: per-(tenant, route) statements never outgrow two
// generations however many tenants pass; a set in use stays, an idle one
// ages out, and a route's statements never serve another route.
func TestStmtCacheBounded(t *testing.T) {
	var c stmtCache
	hot := cacheKey(-1 + 1<<20)
	c.put(hot, "hot")
	for i := range 10 * stmtGeneration {
		c.put(cacheKey(i), i)
		if n := c.len(); n > 2*stmtGeneration {
			t.Fatalf("cache holds %d sets, want at most %d", n, 2*stmtGeneration)
		}
		if i%(stmtGeneration/2) == 0 {
			if v, ok := c.get(hot); !ok || v != "hot" {
				t.Fatalf("after %d other tenants the set in use was dropped", i)
			}
		}
	}
	if _, ok := c.get(cacheKey(0)); ok {
		t.Error("an idle tenant's set never aged out")
	}
	if v, ok := c.get(cacheKey(10*stmtGeneration - 1)); !ok || v != 10*stmtGeneration-1 {
		t.Errorf("the latest set: %v %v", v, ok)
	}
	if _, ok := c.get(stmtKey{tenant: hot.tenant, route: "other"}); ok {
		t.Error("a route's statements were served to another route")
	}
}

// The prepared budget: the first preparedSets pairs prepare, for good;
// later ones run unprepared, and a set rebuilt or moved between
// generations keeps its pair's mode however many tenants passed.
func TestStmtCachePreparedBudget(t *testing.T) {
	var s stmtCache
	for i := range preparedSets + 1 {
		st := &docStmts{}
		s.put(cacheKey(i), st)
		if want := i >= preparedSets; st.unprepared != want {
			t.Fatalf("set %d: unprepared = %v, want %v", i, st.unprepared, want)
		}
	}
	again := &docStmts{}
	s.put(cacheKey(preparedSets), again)
	if !again.unprepared {
		t.Fatal("a rebuilt unprepared set became prepared")
	}
	for i := preparedSets + 1; i < 3*stmtGeneration; i++ {
		s.put(cacheKey(i), &docStmts{})
	}
	if _, ok := s.get(cacheKey(0)); ok {
		t.Fatal("the first set is still cached: the test does not reach a rebuild")
	}
	rebuilt := &docStmts{}
	s.put(cacheKey(0), rebuilt)
	if rebuilt.unprepared {
		t.Fatal("a rebuilt prepared pair became unprepared")
	}
	fresh := &docStmts{}
	s.put(cacheKey(3*stmtGeneration), fresh)
	if !fresh.unprepared {
		t.Fatal("a new pair became prepared after the cache rolled over: the budget grew")
	}
	if n := len(s.prepared); n != preparedSets {
		t.Errorf("%d prepared pairs, want %d", n, preparedSets)
	}
}
