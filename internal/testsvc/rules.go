package testsvc

import (
	"testing"

	"github.com/tenantwire/tenantwire/floors"
)

// UseRule runs the rest of t with *rules, a backend's package copy of its
// rules, replaced by fresh (the backend's Rules(), a value no other code
// holds) with kind's rule edited, and restores it after. A test of how a
// kind's rule drives the runtime thus changes a copy, never a map the
// adapter or a caller of Rules() shares. Tests using it must not run in
// parallel.
func UseRule(t testing.TB, rules *floors.Backend, fresh floors.Backend, kind floors.Kind, edit func(*floors.KindRule)) {
	t.Helper()
	if _, ok := fresh.Kinds[kind]; !ok {
		t.Fatalf("backend %s has no kind %s", fresh.Name, kind)
	}
	r := fresh.Kinds[kind]
	edit(&r)
	fresh.Kinds[kind] = r
	old := *rules
	*rules = fresh
	t.Cleanup(func() { *rules = old })
}
