// Package spelling generates spellings of one server address for the
// property tests of each backend's target names: every spelling it
// returns names the same IPv4 loopback address, so two of them must be
// recognised as one target.
package spelling

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Loopback returns a random spelling of 127.0.0.1 usable as a URI host:
// dotted, IPv4-mapped IPv6 in several forms (bracketed), and, when
// percent is set (a grammar that unescapes hosts), percent-encoded.
func Loopback(r *rand.Rand, percent bool) string {
	forms := []func() string{
		func() string { return "127.0.0.1" },
		func() string { return "[::ffff:127.0.0.1]" },
		func() string { return "[::FFFF:7f00:1]" },
		func() string { return "[0:0:0:0:0:ffff:7F00:0001]" },
		func() string { return "[::ffff:7f00:0001]" },
	}
	if percent {
		forms = append(forms, func() string {
			var b strings.Builder
			for _, c := range "127.0.0.1" {
				if r.IntN(2) == 0 {
					fmt.Fprintf(&b, "%%%02X", c)
				} else {
					b.WriteRune(c)
				}
			}
			return b.String()
		})
	}
	return forms[r.IntN(len(forms))]()
}

// Port returns ":port", or "" when port is the grammar's default and the
// coin says to leave it out.
func Port(r *rand.Rand, port, defaultPort string) string {
	if port == defaultPort && r.IntN(2) == 0 {
		return ""
	}
	return ":" + port
}

// Case returns s with each letter's case chosen at random.
func Case(r *rand.Rand, s string) string {
	b := []byte(s)
	for i, c := range b {
		if r.IntN(2) == 0 {
			b[i] = byte(strings.ToUpper(string(c))[0])
		}
	}
	return string(b)
}
