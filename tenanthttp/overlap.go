package tenanthttp

import (
	"net/http"
	"net/url"
	"strings"
)

// pattern is a ServeMux pattern taken apart the way net/http does it, so
// that two patterns can be compared by the requests they match rather than
// by their text. Only patterns net/http accepted are parsed.
type pattern struct {
	method string // "" matches every method; GET also matches HEAD
	host   string // "" matches every host
	// segs are the path segments. A literal "/" is the {$} anchor (the
	// path ends with a slash here); a wildcard matches one segment other
	// than that final slash. A multi wildcard ({x...} or a trailing slash)
	// is last and matches one or more remaining segments of any kind.
	segs []segment
}

type segment struct {
	lit         string
	wild, multi bool
}

// parsePattern mirrors net/http's own parser for an accepted pattern.
func parsePattern(s string) (pattern, bool) {
	var p pattern
	rest := s
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		p.method, rest = s[:i], strings.TrimLeft(s[i+1:], " \t")
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return pattern{}, false
	}
	p.host, rest = rest[:i], rest[i:]
	for rest != "" {
		rest = rest[1:]
		if rest == "" {
			p.segs = append(p.segs, segment{wild: true, multi: true})
			break
		}
		j := strings.IndexByte(rest, '/')
		if j < 0 {
			j = len(rest)
		}
		seg := rest[:j]
		rest = rest[j:]
		switch {
		case seg == "{$}":
			p.segs = append(p.segs, segment{lit: "/"})
		case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "...}"):
			p.segs = append(p.segs, segment{wild: true, multi: true})
		case strings.HasPrefix(seg, "{"):
			p.segs = append(p.segs, segment{wild: true})
		case seg == "":
			// An empty segment ("//") sits where wildcards do in
			// ServeMux's tree, and matches like one.
			p.segs = append(p.segs, segment{wild: true})
		default:
			lit, err := url.PathUnescape(seg)
			if err != nil {
				lit = seg // net/http keeps a segment it cannot unescape as is
			}
			p.segs = append(p.segs, segment{lit: lit})
		}
	}
	return p, true
}

// fixed returns the segments before a final multi wildcard and whether
// there is one.
func (p pattern) fixed() ([]segment, bool) {
	if n := len(p.segs); n > 0 && p.segs[n-1].multi {
		return p.segs[:n-1], true
	}
	return p.segs, false
}

// overlaps reports whether some request matches both patterns.
func overlaps(a, b pattern) bool {
	if a.host != "" && b.host != "" && a.host != b.host {
		return false
	}
	if a.method != "" && b.method != "" && a.method != b.method && !getHead(a.method, b.method) && !getHead(b.method, a.method) {
		return false
	}
	fa, openA := a.fixed()
	fb, openB := b.fixed()
	for i := range min(len(fa), len(fb)) {
		if !segsMeet(fa[i], fb[i]) {
			return false
		}
	}
	switch {
	case openA && openB:
		return true
	case openA: // b's segments past a's fixed ones fill a's multi (one or more)
		return len(fb) > len(fa)
	case openB:
		return len(fa) > len(fb)
	}
	return len(fa) == len(fb)
}

// covers reports whether every request a matches, b matches too.
func covers(b, a pattern) bool {
	if b.host != "" && a.host != b.host {
		return false
	}
	if b.method != "" && a.method != b.method && !getHead(a.method, b.method) {
		return false
	}
	fa, openA := a.fixed()
	fb, openB := b.fixed()
	if !openB {
		if openA || len(fa) != len(fb) {
			return false
		}
	} else if len(fa) < len(fb) || (!openA && len(fa) == len(fb)) {
		return false
	}
	for i := range fb {
		if !segIn(fa[i], fb[i]) {
			return false
		}
	}
	return true
}

// getHead reports whether a pattern for method a matches only requests a
// pattern for method b matches too, a being HEAD and b GET.
func getHead(a, b string) bool { return a == http.MethodHead && b == http.MethodGet }

// segsMeet reports whether one request segment matches both.
func segsMeet(x, y segment) bool {
	switch {
	case x.wild && y.wild:
		return true
	case x.wild:
		return y.lit != "/"
	case y.wild:
		return x.lit != "/"
	}
	return x.lit == y.lit
}

// segIn reports whether every segment x matches, y matches too.
func segIn(x, y segment) bool {
	if y.wild {
		return x.wild || x.lit != "/"
	}
	return !x.wild && x.lit == y.lit
}

// answersFor reports whether, on one ServeMux holding both, pattern t
// answers some request that pattern s matches. net/http gives a request to
// the most specific pattern; where neither is more specific, one with a
// host beats one without. A hostless pattern can never be more specific
// than one with a host, so when only one has a host, it wins.
func answersFor(t, s pattern) bool {
	if !overlaps(t, s) {
		return false
	}
	switch {
	case t.host != "" && s.host == "":
		return true
	case t.host == "" && s.host != "":
		return false
	}
	// s wins only where it is strictly more specific than t.
	return !covers(t, s) || covers(s, t)
}
