package modules

import (
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// TestOwnSuspensionSurvivesAStoreThatDropsIt: a replica follows a store
// that lists tenant A, then suspends A itself (an Offboard, whose
// teardown may remove A's record from the store): a later read of the
// store that no longer lists A keeps A suspended on this replica, and so
// does the next one; only Resume lifts it.
func TestOwnSuspensionSurvivesAStoreThatDropsIt(t *testing.T) {
	s := &Suspensions{}
	a, b := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-0000000000aa"), tenancy.MustParseID("0a0a0a0a-0000-4000-8000-0000000000bb")
	s.follow(nil)
	s.follow([]tenancy.ID{a, b})
	s.Suspend(a) // already in the set: it must still be this replica's own
	s.follow(nil)
	if !s.Suspended(a) {
		t.Fatal("a read of the store that no longer lists the tenant lifted the replica's own suspension")
	}
	s.follow([]tenancy.ID{b})
	if !s.Suspended(a) || !s.Suspended(b) {
		t.Fatalf("suspended after two reads: a %v, b %v; want both", s.Suspended(a), s.Suspended(b))
	}
	s.follow(nil)
	if s.Suspended(b) {
		t.Error("a suspension only the store made outlived the store's record")
	}
	s.Resume(a)
	if s.Suspended(a) {
		t.Error("Resume did not lift the replica's own suspension")
	}
}
