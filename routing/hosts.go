package routing

import (
	"net"
	"net/netip"
	"strings"
)

// CanonicalHost is one spelling of a host for Targets: names lower-cased
// and stripped of a trailing dot, IP literals in their canonical form with
// IPv4-mapped IPv6 addresses unmapped (so [::ffff:127.0.0.1] is
// 127.0.0.1), and a Unix socket path kept as it is. It cannot know that
// two names resolve to one address: that is for the server's identity.
func CanonicalHost(host string) string {
	if strings.HasPrefix(host, "/") {
		return host
	}
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// CanonicalHostPort is CanonicalHost joined with port, a socket path
// keeping its own form.
func CanonicalHostPort(host, port string) string {
	h := CanonicalHost(host)
	if strings.HasPrefix(h, "/") {
		return h + ":" + port
	}
	return net.JoinHostPort(h, port)
}
