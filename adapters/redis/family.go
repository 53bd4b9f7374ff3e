package redis

import (
	"strings"
	"sync"

	"github.com/tenantwire/tenantwire/tenancy"
)

// keyFamily is one family of keys the adapter writes. Every key it writes
// belongs to a family of keyFamilies, and offboarding and its verifier
// walk each of them: a writer of a new family adds it here, or its keys
// outlive a tenant's offboarding (TestOffboardLeavesNoKeyFamilyBehind
// fails on a key no family claims, and the verifier's scan for
// undeclared keys fails the offboard).
type keyFamily struct {
	name string
	// match is the SCAN MATCH pattern of the family's keys that belong to
	// a route key matching routePattern.
	match func(routePattern string) string
	// routeKey is the route key (buildKey's layout) key belongs to; false
	// when key is not of the family.
	routeKey func(key string) (string, bool)
}

var keyFamilies = []keyFamily{
	// A route's own keys (route.target): cache, counter, idempotency,
	// lock, stream and fleet keys.
	{name: "route",
		match:    func(p string) string { return p },
		routeKey: func(k string) (string, bool) { return k, isRouteKey(k) }},
	// AddOnce's operation markers (once.go), each holding its counter's
	// key as its hash tag.
	{name: "once",
		match: func(p string) string { return onceKeyPrefix + p },
		routeKey: func(k string) (string, bool) {
			rest, ok := strings.CutPrefix(k, onceKeyPrefix)
			if !ok {
				return "", false
			}
			inner, _, ok := strings.Cut(rest, "}")
			return inner, ok && isRouteKey(inner)
		}},
}

// familyOf is the family of key and the route key it belongs to.
func familyOf(key string) (string, string, bool) {
	for _, f := range keyFamilies {
		if rk, ok := f.routeKey(key); ok {
			return f.name, rk, true
		}
	}
	return "", "", false
}

// isRouteKey reports whether key has buildKey's layout: a scope marker,
// its segments, a one-letter kind and a route name.
func isRouteKey(key string) bool {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return false
	}
	marker, rest, ok := strings.Cut(rest, ":")
	if !ok || !validMarker(marker) {
		return false
	}
	segs := 2 // kind, route
	if markerHasNamespace(marker) {
		segs++
	}
	if markerHasTenant(marker) {
		segs++
	}
	return strings.Count(rest, ":") >= segs
}

func validMarker(m string) bool {
	switch m {
	case "s", "g", "d", "n", "t", "dn", "dt", "nt", "dnt":
		return true
	}
	return false
}

// forgetters are the in-process per-tenant state of a module's routes
// (the stream routes' memo of created groups, the namespace caches),
// dropped for a tenant when it is offboarded, so that a tenant
// provisioned again starts from what the server holds.
type forgetters struct {
	mu  sync.Mutex
	fns []func(tenancy.ID)
}

func (f *forgetters) add(fn func(tenancy.ID)) {
	f.mu.Lock()
	f.fns = append(f.fns, fn)
	f.mu.Unlock()
}

func (f *forgetters) forget(id tenancy.ID) {
	f.mu.Lock()
	fns := f.fns
	f.mu.Unlock()
	for _, fn := range fns {
		fn(id)
	}
}
