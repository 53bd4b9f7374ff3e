package redis

import (
	"context"
	"strings"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

// parsedKey is what a key encodes; parseKey inverts buildKey, which is the
// proof that buildKey is injective.
type parsedKey struct {
	marker, ns  string
	tenant      tenancy.ID
	kind        byte
	route, user string
}

func parseKey(k string) (parsedKey, bool) {
	var p parsedKey
	rest, ok := strings.CutPrefix(k, keyPrefix)
	if !ok {
		return p, false
	}
	if p.marker, rest, ok = strings.Cut(rest, ":"); !ok {
		return p, false
	}
	switch p.marker {
	case "s", "g", "d", "n", "t", "dn", "dt", "nt", "dnt":
	default:
		return p, false
	}
	if markerHasNamespace(p.marker) {
		if p.ns, rest, ok = strings.Cut(rest, ":"); !ok {
			return p, false
		}
	}
	if markerHasTenant(p.marker) {
		if len(rest) < 33 || rest[32] != ':' {
			return p, false
		}
		var b [16]byte
		for i := range b {
			hi, lo := strings.IndexByte(hexDigits, rest[2*i]), strings.IndexByte(hexDigits, rest[2*i+1])
			if hi < 0 || lo < 0 {
				return p, false
			}
			b[i] = byte(hi<<4 | lo)
		}
		id, err := tenancy.IDFromBytes(b)
		if err != nil {
			return p, false
		}
		p.tenant, rest = id, rest[33:]
	}
	if len(rest) < 2 || rest[1] != ':' {
		return p, false
	}
	p.kind, rest = rest[0], rest[2:]
	if p.route, rest, ok = strings.Cut(rest, ":"); !ok {
		return p, false
	}
	p.user, ok = unescape(rest)
	return p, ok
}

var markers = []string{"s", "g", "d", "n", "t", "dn", "dt", "nt", "dnt"}

func keyFromFuzz(m uint8, ns string, tb []byte, kind uint8, route, user string) (parsedKey, bool) {
	p := parsedKey{marker: markers[int(m)%len(markers)], kind: "cnilpxf"[int(kind)%7], route: route, user: user}
	if validName("route", route) != nil {
		return p, false
	}
	if markerHasNamespace(p.marker) {
		if validName("namespace", ns) != nil {
			return p, false
		}
		p.ns = ns
	}
	if markerHasTenant(p.marker) {
		var b [16]byte
		copy(b[:], tb)
		id, err := tenancy.IDFromBytes(b)
		if err != nil {
			return p, false
		}
		p.tenant = id
	}
	return p, true
}

func (p parsedKey) build() string {
	return buildKey(p.marker, p.ns, p.tenant, p.kind, p.route, p.user)
}

// FuzzKeyInjective: every key parses back to exactly what built it, so two
// different (scope, namespace, tenant, kind, route, user key) tuples never
// share a key; no key carries a hash tag.
func FuzzKeyInjective(f *testing.F) {
	f.Add(uint8(4), "", []byte{1}, uint8(0), "sessions", "user:1", uint8(0), "", []byte{2}, "sessions", "user:1")
	f.Add(uint8(0), "", []byte{}, uint8(0), "a", "tw:t:0a:c:a:x", uint8(4), "", []byte{1}, "a", "x")
	f.Add(uint8(7), "ns", []byte{9}, uint8(3), "locks", "{tag}%7B", uint8(7), "ns", []byte{9}, "locks", "%7B{tag}")
	f.Fuzz(func(t *testing.T, m1 uint8, ns1 string, t1 []byte, kind uint8, r1, u1 string, m2 uint8, ns2 string, t2 []byte, r2, u2 string) {
		a, ok1 := keyFromFuzz(m1, ns1, t1, kind, r1, u1)
		b, ok2 := keyFromFuzz(m2, ns2, t2, kind, r2, u2)
		for _, p := range []struct {
			ok bool
			k  parsedKey
		}{{ok1, a}, {ok2, b}} {
			if !p.ok {
				continue
			}
			key := p.k.build()
			if strings.ContainsAny(key, "{}") || clusterSlot(key) != crc16(key)%16384 {
				t.Fatalf("key %q carries a brace", key)
			}
			back, ok := parseKey(key)
			if !ok || back != p.k {
				t.Fatalf("key %q parses to %+v (ok=%v), built from %+v", key, back, ok, p.k)
			}
		}
		if ok1 && ok2 && a != b && a.build() == b.build() {
			t.Fatalf("%+v and %+v share key %q", a, b, a.build())
		}
	})
}

func TestKeyLayout(t *testing.T) {
	id := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	for _, c := range []struct {
		marker, ns, user, want string
	}{
		{"s", "", "k", "tw:s:c:sessions:k"},
		{"g", "", "k", "tw:g:c:sessions:k"},
		{"t", "", "k", "tw:t:0a0a0a0a00004000800000000000000a:c:sessions:k"},
		{"n", "acme", "k", "tw:n:acme:c:sessions:k"},
		{"nt", "acme", "{x}%", "tw:nt:acme:0a0a0a0a00004000800000000000000a:c:sessions:%7Bx%7D%25"},
	} {
		if got := buildKey(c.marker, c.ns, id, 'c', "sessions", c.user); got != c.want {
			t.Errorf("buildKey(%s) = %q, want %q", c.marker, got, c.want)
		}
	}
	if got := scopeMarker(false, true, true, true); got != "dnt" {
		t.Errorf("marker %q", got)
	}
	if got := scopeMarker(true, false, false, false); got != "g" {
		t.Errorf("marker %q", got)
	}
}

func TestUnescapeRejectsForeignText(t *testing.T) {
	for _, s := range []string{"%", "%2", "%41", "{", "a}"} {
		if _, ok := unescape(s); ok {
			t.Errorf("unescape(%q) accepted", s)
		}
	}
}

func TestPerTenantNamespace(t *testing.T) {
	id := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	if ns, err := tenantNamespace("acme")(id); err != nil || ns != "acme"+id.Hex() {
		t.Fatalf("%q %v", ns, err)
	}
}

func BenchmarkKeyTagged(b *testing.B) {
	id := tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	b.ReportAllocs()
	for b.Loop() {
		_ = buildKey("t", "", id, 'c', "sessions", "user:42")
	}
}

// BenchmarkTarget is the adapter's whole per-call cost before the round
// trip: tenant from ctx, namespace, key.
func BenchmarkTarget(b *testing.B) {
	ctx := tenancy.WithTenant(context.Background(), tenancy.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a"))
	c := &core{module: "m"}
	for _, tc := range []struct {
		name string
		spec routeSpec
	}{
		{"tagged", routeSpec{name: "sessions", kind: kindCache, tenantAware: true}},
		{"namespace", routeSpec{name: "sessions", kind: kindCache, namespace: tenantNamespace("acme")}},
	} {
		r := newRoute(c, &tc.spec)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, _, err := r.target(ctx, "user:42"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
