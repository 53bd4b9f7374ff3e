package redis

import (
	"fmt"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Key layout (docs/redis.md):
//
//	tw:<marker>:[<namespace>:][<tenant hex>:]<kind>:<route>:<escaped user key>
//
// The marker says which segments follow: "s" shared, "g" tenant-global, or
// the letters of "dnt" that apply in that order (d: routed client, n:
// per-tenant namespace, t: tenant-aware); the tenant hex follows when d or
// t is set. Namespaces and route names are validated to hold no ':', the
// tenant hex is fixed-width and the kind is one letter, so the prefix
// parses unambiguously and the user key is everything after it: the
// encoding is injective whatever the user key contains. Braces and '%' in
// the user key are percent-escaped so that no key ever carries a hash tag:
// every operation here is single-key, so each key hashes on its full name
// and one tenant's keys (or one popular user key) spread over the cluster.

const keyPrefix = "tw:"

// scopeMarker computes a route's marker from its wiring.
func scopeMarker(global, routed, namespace, tenantAware bool) string {
	if global {
		return "g"
	}
	var m string
	if routed {
		m += "d"
	}
	if namespace {
		m += "n"
	}
	if tenantAware {
		m += "t"
	}
	if m == "" {
		return "s"
	}
	return m
}

// markerHasTenant reports whether keys under the marker carry the tenant.
func markerHasTenant(m string) bool {
	return strings.IndexByte(m, 't') >= 0 || strings.IndexByte(m, 'd') >= 0
}

// markerHasNamespace reports whether keys under the marker carry a namespace.
func markerHasNamespace(m string) bool { return strings.IndexByte(m, 'n') >= 0 }

const hexDigits = "0123456789abcdef"

// buildKey encodes one key. ns is used only when the marker has n, tenant
// only when it has d or t.
func buildKey(marker, ns string, tenant tenancy.ID, kind byte, route, user string) string {
	withNS, withTenant := markerHasNamespace(marker), markerHasTenant(marker)
	// The exact length, so the key is one allocation of the smallest size
	// class that holds it.
	n := len(keyPrefix) + len(marker) + 1 + 2 + len(route) + 1 + escapedLen(user)
	if withNS {
		n += len(ns) + 1
	}
	if withTenant {
		n += 33
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(keyPrefix)
	b.WriteString(marker)
	b.WriteByte(':')
	if withNS {
		b.WriteString(ns)
		b.WriteByte(':')
	}
	if withTenant {
		var h [33]byte
		for i, c := range tenant.Bytes() {
			h[2*i], h[2*i+1] = hexDigits[c>>4], hexDigits[c&0xf]
		}
		h[32] = ':'
		b.Write(h[:])
	}
	b.WriteByte(kind)
	b.WriteByte(':')
	b.WriteString(route)
	b.WriteByte(':')
	writeEscaped(&b, user)
	return b.String()
}

// needsEscape reports whether c is escaped in a user key.
func needsEscape(c byte) bool { return c == '%' || c == '{' || c == '}' }

func escapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			n += 2
		}
	}
	return n
}

func writeEscaped(b *strings.Builder, s string) {
	start := 0
	for i := 0; i < len(s); i++ {
		if !needsEscape(s[i]) {
			continue
		}
		b.WriteString(s[start:i])
		b.WriteByte('%')
		b.WriteByte("0123456789ABCDEF"[s[i]>>4])
		b.WriteByte("0123456789ABCDEF"[s[i]&0xf])
		start = i + 1
	}
	b.WriteString(s[start:])
}

// unescape reverses writeEscaped; ok is false for text it cannot have made.
func unescape(s string) (string, bool) {
	if strings.IndexByte(s, '%') < 0 {
		return s, !strings.ContainsAny(s, "{}")
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '{', '}':
			return "", false
		case '%':
			if i+2 >= len(s) {
				return "", false
			}
			switch s[i+1 : i+3] {
			case "25":
				b.WriteByte('%')
			case "7B":
				b.WriteByte('{')
			case "7D":
				b.WriteByte('}')
			default:
				return "", false
			}
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// validName checks a route name or a resolved namespace: 1 to 128 of
// [A-Za-z0-9_.-], so it holds no ':' (the segment separator), no brace
// (a hash tag) and nothing a shell or a log would mangle.
func validName(what, s string) error {
	if len(s) == 0 || len(s) > 128 {
		return fmt.Errorf("redis: %s %q must be 1 to 128 characters", what, s)
	}
	for i := 0; i < len(s); i++ {
		if !nameByte[s[i]] {
			return fmt.Errorf("redis: %s %q may hold only letters, digits, '_', '.' and '-'", what, s)
		}
	}
	return nil
}

// nameByte marks the bytes validName accepts: one load per byte, since a
// namespace is checked on every call of a namespace route.
var nameByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
	}
	return t
}()
