package tenanthttp

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func mustPattern(t *testing.T, s string) pattern {
	t.Helper()
	if err := handle(http.NewServeMux(), s, notFound); err != nil {
		t.Fatalf("net/http refuses %q: %v", s, err)
	}
	p, ok := parsePattern(s)
	if !ok {
		t.Fatalf("parsePattern(%q) failed", s)
	}
	return p
}

// Pairs written out by hand; each is checked in both directions.
func TestPatternOverlapTable(t *testing.T) {
	for _, c := range []struct {
		a, b    string
		overlap bool
		aInB    bool // every request a matches, b matches
		bInA    bool
	}{
		{"/a", "/a", true, true, true},
		{"/a", "/b", false, false, false},
		{"/a", "/a/", false, false, false},
		{"/a/", "/a/b", true, false, true},
		{"/a/", "/a/{$}", true, false, true},
		{"/a/{$}", "/a/b", false, false, false},
		{"/a/{$}", "/a/{x}", false, false, false}, // a wildcard never matches the final slash
		{"/a/{x}", "/a/b", true, false, true},
		{"/a/{x}", "/a/{y}", true, true, true},
		{"/a/{x...}", "/a/", true, true, true},
		{"/a/{x...}", "/a", false, false, false},
		{"/", "/anything/at/all", true, false, true},
		{"/", "/{$}", true, false, true},
		{"/{$}", "/a", false, false, false},
		{"/{x}/b", "/a/{y}", true, false, false},
		{"/{x}/b", "/a/c", false, false, false},
		{"/debug/", "/debug/pprof/", true, false, true},
		{"/debug/", "/debugger", false, false, false},
		{"/admin/{p}", "/admin/stats", true, false, true},
		{"/admin/{p}", "/admin/stats/", false, false, false},
		{"/a%2Fb", "/a/b", false, false, false}, // one segment "a/b" against two
		{"/a%2Fb", "/{x}", true, true, false},
		{"/%61", "/a", true, true, true}, // literals compare unescaped
		{"//", "/a/", true, false, true}, // an empty segment matches like a wildcard
		// Methods: none matches all; GET matches HEAD too.
		{"GET /a", "/a", true, true, false},
		{"GET /a", "POST /a", false, false, false},
		{"GET /a", "HEAD /a", true, false, true},
		{"HEAD /a", "POST /a", false, false, false},
		{"GET /a", "GET /a", true, true, true},
		{"POST /", "GET /x", false, false, false},
		{"GET /", "/metrics", true, false, false},
		// Hosts: none matches all; two hosts never meet.
		{"x.example/", "/metrics", true, false, false},
		{"x.example/metrics", "/metrics", true, true, false},
		{"x.example/a", "y.example/a", false, false, false},
		{"x.example/a", "x.example/a", true, true, true},
		{"GET x.example/a/", "/a/{$}", true, false, false},
		{"GET x.example/a/", "POST /a/{$}", false, false, false},
	} {
		a, b := mustPattern(t, c.a), mustPattern(t, c.b)
		if got := overlaps(a, b); got != c.overlap {
			t.Errorf("overlaps(%q, %q) = %v", c.a, c.b, got)
		}
		if got := overlaps(b, a); got != c.overlap {
			t.Errorf("overlaps(%q, %q) = %v", c.b, c.a, got)
		}
		if got := covers(b, a); got != c.aInB {
			t.Errorf("covers(%q, %q) = %v", c.b, c.a, got)
		}
		if got := covers(a, b); got != c.bInA {
			t.Errorf("covers(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// Who answers a request both match, on one ServeMux: answersFor(t, s) is
// true when t takes some request s matches.
func TestAnswersForTable(t *testing.T) {
	for _, c := range []struct {
		t, s string
		want bool
	}{
		{"/", "/metrics", false}, // the shadow is more specific
		{"/", "/debug/", false},  // likewise for a subtree
		{"GET /debug/pprof/", "/debug/", true},
		{"/debug/pprof/", "/debug/", true},
		{"GET /admin/stats", "/admin/{p}", true},
		{"/admin/{p}/x", "/admin/{p}", false}, // no request in common
		{"x.example/", "/metrics", true},      // a host beats no host
		{"/", "x.example/metrics", false},
		{"/metrics", "x.example/", false},
		{"GET /metrics", "/metrics", true}, // a method is more specific
		{"/metrics", "/metrics", true},     // the same pattern: one path, two classes
		{"GET /", "/metrics", true},        // neither is more specific
		{"POST /", "/x/{$}", true},
		{"/x/{$}", "/x/", true},
		{"/x", "/x/", false},
		{"/{x}", "/metrics", false},
		{"/{x}/", "/metrics", false},
	} {
		if got := answersFor(mustPattern(t, c.t), mustPattern(t, c.s)); got != c.want {
			t.Errorf("answersFor(%q, %q) = %v, want %v", c.t, c.s, got, c.want)
		}
	}
}

// Differential check against net/http itself: over a small universe of
// patterns and every request built from the same literals (plus one other
// literal standing for all the rest), overlaps, covers and answersFor say
// what ServeMux does.
func TestPatternRelationsAgreeWithServeMux(t *testing.T) {
	paths := []string{"/", "/{$}", "/a", "/a/", "/a/{$}", "/{x}", "/{x}/", "/{x...}", "/a/b", "/a/{x}",
		"/{x}/b", "/a/b/", "/{x}/{y}", "/a/{x...}", "/{x}/{$}", "/b", "/a/b/{$}", "/{x}/b/", "/a%2Fb"}
	var pats []string
	for _, m := range []string{"", "GET ", "HEAD ", "POST "} {
		for _, h := range []string{"", "h"} {
			for _, p := range paths {
				pats = append(pats, m+h+p)
			}
		}
	}
	var reqs []*http.Request
	// Two literals suffice: a pair of patterns has at most two literals at
	// one position, and a wildcard needs a witness unlike one of them. No
	// pattern here has a third segment other than the final slash, so any
	// one literal serves there.
	segs := []string{"a", "b", "a%2Fb"}
	var reqPaths []string
	var grow func(prefix string, depth int)
	grow = func(prefix string, depth int) {
		reqPaths = append(reqPaths, prefix, prefix+"/")
		if depth == 2 {
			reqPaths = append(reqPaths, prefix+"/a", prefix+"/a/")
			return
		}
		for _, s := range segs {
			grow(prefix+"/"+s, depth+1)
		}
	}
	reqPaths = append(reqPaths, "/")
	for _, s := range segs {
		grow("/"+s, 1)
	}
	for _, m := range []string{"GET", "HEAD", "POST"} {
		for _, h := range []string{"h", "other"} {
			for _, p := range reqPaths {
				u, err := url.Parse(p)
				if err != nil {
					t.Fatal(err)
				}
				reqs = append(reqs, &http.Request{Method: m, Host: h, URL: u})
			}
		}
	}
	type marker struct{ http.Handler }
	words := (len(reqs) + 63) / 64
	matches := make([][]uint64, len(pats)) // bit j: pattern matches reqs[j]
	parsed := make([]pattern, len(pats))
	for i, p := range pats {
		parsed[i] = mustPattern(t, p)
		mux := http.NewServeMux()
		mk := &marker{notFound}
		mux.Handle(p, mk)
		matches[i] = make([]uint64, words)
		for j, r := range reqs {
			if h, _ := mux.Handler(r); h == http.Handler(mk) {
				matches[i][j/64] |= 1 << (j % 64)
			}
		}
	}
	for i := range pats {
		for k := range pats {
			meet, aInB := false, true
			for w := range words {
				meet = meet || matches[i][w]&matches[k][w] != 0
				aInB = aInB && matches[i][w]&^matches[k][w] == 0
			}
			if got := overlaps(parsed[i], parsed[k]); got != meet {
				t.Errorf("overlaps(%q, %q) = %v, net/http: %v", pats[i], pats[k], got, meet)
			}
			if got := covers(parsed[k], parsed[i]); got != aInB {
				t.Errorf("covers(%q, %q) = %v, net/http: %v", pats[k], pats[i], got, aInB)
			}
			if !meet || i >= k {
				continue
			}
			// Precedence, where net/http accepts both on one mux.
			mux := http.NewServeMux()
			mi, mk := &marker{notFound}, &marker{notFound}
			if handle(mux, pats[i], mi) != nil || handle(mux, pats[k], mk) != nil {
				if !answersFor(parsed[i], parsed[k]) || !answersFor(parsed[k], parsed[i]) {
					t.Errorf("answersFor(%q, %q) is false one way, but net/http finds them in conflict", pats[i], pats[k])
				}
				continue
			}
			iTook, kTook := false, false
			for j, r := range reqs {
				bit := uint64(1) << (j % 64)
				if matches[i][j/64]&bit == 0 && matches[k][j/64]&bit == 0 {
					continue
				}
				h, _ := mux.Handler(r)
				iTook = iTook || h == http.Handler(mi) && matches[k][j/64]&bit != 0
				kTook = kTook || h == http.Handler(mk) && matches[i][j/64]&bit != 0
			}
			if got := answersFor(parsed[i], parsed[k]); got != iTook {
				t.Errorf("answersFor(%q, %q) = %v, net/http: %v", pats[i], pats[k], got, iTook)
			}
			if got := answersFor(parsed[k], parsed[i]); got != kTook {
				t.Errorf("answersFor(%q, %q) = %v, net/http: %v", pats[k], pats[i], got, kTook)
			}
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("%d patterns × %d requests agree with net/http", len(pats), len(reqs))
}

// FuzzRouteOverlap checks the relations on any two patterns net/http
// accepts against net/http's own answer for one request: a request both
// match means overlaps; one a matches and b does not means b does not
// cover a; a request of s that a mux holding both gives to t means
// answersFor(t, s). A miss here would be a route that answers for a
// shadow unnoticed.
func FuzzRouteOverlap(f *testing.F) {
	for _, s := range [][5]string{
		{"GET /debug/pprof/", "/debug/", "GET", "h", "/debug/pprof/x"},
		{"GET /admin/stats", "/admin/{p}", "GET", "h", "/admin/stats"},
		{"x.example/", "/metrics", "POST", "x.example", "/metrics"},
		{"/a/{$}", "/a/{x}", "HEAD", "h", "/a/"},
		{"/{x}/b/{y...}", "/a/{z}/", "GET", "h", "/a/b/c"},
		{"/a%2Fb", "/{x}", "GET", "h", "/a%2Fb"},
		{"//", "/0/", "0", "0", "/0/"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4])
	}
	type marker struct{ http.Handler }
	f.Fuzz(func(t *testing.T, a, b, method, host, path string) {
		ma, mb, both := http.NewServeMux(), http.NewServeMux(), http.NewServeMux()
		ha, hb := &marker{notFound}, &marker{notFound}
		if handle(ma, a, ha) != nil || handle(mb, b, hb) != nil {
			return
		}
		pa, okA := parsePattern(a)
		pb, okB := parsePattern(b)
		if !okA || !okB {
			t.Fatalf("net/http accepts %q and %q, parsePattern does not", a, b)
		}
		u, err := url.ParseRequestURI(path)
		if err != nil || !strings.HasPrefix(path, "/") || method == "" || strings.ContainsAny(method, " \t") {
			return
		}
		r := &http.Request{Method: method, Host: host, URL: u}
		hA, _ := ma.Handler(r)
		hB, _ := mb.Handler(r)
		inA, inB := hA == http.Handler(ha), hB == http.Handler(hb)
		if inA && inB && !overlaps(pa, pb) {
			t.Fatalf("%s %s%s matches %q and %q, overlaps says no", method, host, path, a, b)
		}
		if inA && !inB && covers(pb, pa) {
			t.Fatalf("%s %s%s matches %q and not %q, covers says it does", method, host, path, a, b)
		}
		if !inA || !inB || handle(both, a, ha) != nil || handle(both, b, hb) != nil {
			return
		}
		h, _ := both.Handler(r)
		if h == http.Handler(ha) && !answersFor(pa, pb) {
			t.Fatalf("%q answers %s %s%s, which %q matches, answersFor says no", a, method, host, path, b)
		}
		if h == http.Handler(hb) && !answersFor(pb, pa) {
			t.Fatalf("%q answers %s %s%s, which %q matches, answersFor says no", b, method, host, path, a)
		}
	})
}
