package main

import (
	"slices"
	"strings"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/tenancy"
)

// knownCodes is every code `explain` accepts, the shared validation entry
// spelled out for each shipped backend.
func knownCodes() []string {
	var codes []string
	for _, d := range floors.CodeDocs {
		if strings.HasPrefix(d.Code, "<") {
			continue
		}
		codes = append(codes, d.Code)
	}
	for _, b := range Backends {
		codes = append(codes, string(tenancy.ValidationFailed(b.Name)))
		for _, d := range b.Codes {
			codes = append(codes, d.Code)
		}
	}
	return codes
}

// closestCodes returns up to n known codes nearest to s by edit distance,
// nearest first, leaving out any too far to be a misspelling. A code that
// contains s (or is contained in it) counts as near.
func closestCodes(s string, known []string, n int) []string {
	s = strings.ToLower(strings.TrimSpace(s))
	type scored struct {
		code string
		d    int
	}
	var near []scored
	for _, c := range known {
		d := distance(s, c)
		if s != "" && (strings.Contains(c, s) || strings.Contains(s, c)) {
			d = min(d, len(c)/4)
		}
		if d <= max(3, len(c)/3) {
			near = append(near, scored{c, d})
		}
	}
	slices.SortStableFunc(near, func(a, b scored) int { return a.d - b.d })
	out := make([]string, 0, n)
	for _, x := range near[:min(n, len(near))] {
		out = append(out, x.code)
	}
	return out
}

// distance is the Levenshtein distance between a and b, in bytes (codes
// are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
