package tenanthttp

import (
	"cmp"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Config configures the HTTP boundary. The zero value is header mode on
// X-Tenant-ID with no trusted proxy asserted, which refuses to boot: the
// deployment must say that a proxy sets the header.
type Config struct {
	// TenantAddr is the tenant listener's address; "" means ":8080".
	TenantAddr string
	// OperatorAddr is the operator listener's address; "" means
	// "127.0.0.1:9090", so operator surfaces stay local unless asked.
	OperatorAddr string
	// OperatorHosts are the names the operator listener answers in a
	// request's Host header, each "name" (with no port or the listener's
	// own) or "name:port" (that port only). Every other Host is refused
	// with 403 operator_request_forbidden before any operator handler
	// runs, so a web page that rebinds its own DNS name to 127.0.0.1
	// cannot read /readyz, /tenancy/matrix, /metrics or any operator
	// route; a cross-site Origin or Sec-Fetch-Site is refused alike.
	// Empty means localhost, 127.0.0.1 and [::1]; list the names a
	// scraper or operator reaches a non-loopback OperatorAddr by (a pod
	// IP, ops.internal). An entry that is not a host is refused at fx.New
	// with operator_hosts_invalid.
	OperatorHosts []string

	// Header names the tenant header; "" means X-Tenant-ID. It must be an
	// HTTP token that reaches handlers (not Host, Content-Length or a
	// hop-by-hop header): any other name is refused at fx.New with
	// tenant_source_invalid, because no request could carry it and every
	// request would resolve to the default tenant.
	Header string
	// HeaderOff turns header resolution off (claim and/or host only).
	HeaderOff bool
	// TrustedProxy asserts that a proxy in front of the tenant listener
	// sets the tenant header (and Host) and strips the client's. Header and
	// host modes refuse to boot without it.
	TrustedProxy bool
	// Host maps the first DNS label of the request's Host (lowercased, no
	// port) to a tenant; false (or the zero ID) means the host names none.
	// With it set, a request line in absolute form is refused
	// (tenant_host_ambiguous): its host would replace the Host header.
	Host func(label string) (tenancy.ID, bool)
	// Claim reads the tenant claim of the authenticated principal that the
	// user's authentication middleware (see Wrap) put in the request
	// context; false (or the zero ID) means the request carries none.
	Claim func(*http.Request) (tenancy.ID, bool)
	// RequireTenant answers a request that names no tenant (no claim, no
	// header or a blank one, no host label that maps to a tenant) with 400
	// and the code tenant_required, instead of serving it as the default
	// tenant. Off by default: a single-tenant deployment lives in the
	// default tenant.
	RequireTenant bool
	// Wrap is middleware run on the tenant listener before routing and
	// before tenant resolution, outermost first: authentication goes here
	// so that Claim can read its result.
	Wrap []func(http.Handler) http.Handler
	// Admission limits each tenant's requests on tenant routes (rate,
	// burst, requests in flight), after the tenant is resolved and before
	// the handler: a request over its tenant's limits is answered 429 with
	// Retry-After. Nil admits every request.
	Admission *Admission

	// Limits of both listeners, so that a slow or idle client cannot hold
	// a connection open. Zero means the default given; a negative duration
	// means no limit.
	//
	// ReadHeaderTimeout bounds reading the request line and headers (10s).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading the whole request, body included, from
	// the connection's first byte for it (30s).
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request headers to
	// the end of the response, the handler's run included (60s).
	WriteTimeout time.Duration
	// IdleTimeout bounds how long a keep-alive connection waits for its
	// next request (60s).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers; zero or negative
	// means 64 KiB.
	MaxHeaderBytes int
}

// The listener limits when the Config leaves them zero.
const (
	defaultReadHeaderTimeout = 10 * time.Second
	defaultReadTimeout       = 30 * time.Second
	defaultWriteTimeout      = 60 * time.Second
	defaultIdleTimeout       = 60 * time.Second
	defaultMaxHeaderBytes    = 64 << 10
)

// server is an http.Server for one listener with the configured limits.
func (c Config) server(h http.Handler, errLog *log.Logger) http.Server {
	maxHeader := c.MaxHeaderBytes
	if maxHeader <= 0 {
		maxHeader = defaultMaxHeaderBytes
	}
	return http.Server{
		Handler:           h,
		ReadHeaderTimeout: cmp.Or(c.ReadHeaderTimeout, defaultReadHeaderTimeout),
		ReadTimeout:       cmp.Or(c.ReadTimeout, defaultReadTimeout),
		WriteTimeout:      cmp.Or(c.WriteTimeout, defaultWriteTimeout),
		IdleTimeout:       cmp.Or(c.IdleTimeout, defaultIdleTimeout),
		MaxHeaderBytes:    maxHeader,
		ErrorLog:          errLog,
	}
}

func (c Config) headerName() string {
	if c.Header == "" {
		return DefaultHeader
	}
	return c.Header
}

func (c Config) tenantAddr() string {
	if c.TenantAddr == "" {
		return ":8080"
	}
	return c.TenantAddr
}

func (c Config) operatorAddr() string {
	if c.OperatorAddr == "" {
		return "127.0.0.1:9090"
	}
	return c.OperatorAddr
}

// Mode names the enabled tenant sources in resolution order, joined by
// "+": "claim+header+host", "header", or "default" when none is enabled
// (every request is the default tenant).
func (c Config) Mode() string {
	var parts []string
	if c.Claim != nil {
		parts = append(parts, "claim")
	}
	if !c.HeaderOff {
		parts = append(parts, "header")
	}
	if c.Host != nil {
		parts = append(parts, "host")
	}
	if len(parts) == 0 {
		return "default"
	}
	return strings.Join(parts, "+")
}

// check refuses a configuration that cannot resolve tenants as written.
// Both refusals are reported when both apply.
func (c Config) check() error {
	names, trust := c.checkNames(), c.checkTrust()
	if names == nil || trust == nil {
		return cmp.Or(names, trust)
	}
	return errors.Join(names, trust)
}

// checkNames refuses a tenant header no request can carry to a handler:
// every request would silently be the default tenant.
func (c Config) checkNames() error {
	if c.HeaderOff {
		return nil
	}
	name := c.headerName()
	why := HeaderNameFault(name)
	if why == "" {
		return nil
	}
	return &tenancy.Error{
		Code:   tenancy.CodeTenantSourceInvalid,
		Module: "tenanthttp",
		Detail: fmt.Sprintf("the tenant header name %q %s, so no request could name a tenant and every request would be the default tenant", name, why),
		Fix:    "set Config.Header to the exact header name your proxy sets, such as X-Tenant-ID, with no surrounding spaces or colon",
	}
}

// HeaderNameFault says why no request can carry a header of this name to a
// handler, or returns "" when one can: a name that is not an HTTP token
// never parses as a header, and net/http or a proxy removes the others
// before the handler runs. The HTTP boundary refuses such a tenant header
// name at fx.New; the gRPC boundary applies the same rule to its metadata
// key, which travels as an HTTP/2 header.
func HeaderNameFault(name string) string {
	switch {
	case !validToken(name):
		return "is not an HTTP token (RFC 9110: letters, digits and !#$%&'*+-.^_`|~ only, no spaces, tabs or colons)"
	case unreachableHeaders[textproto.CanonicalMIMEHeaderKey(name)]:
		return "never reaches a handler (net/http consumes it, or proxies drop it as hop-by-hop)"
	}
	return ""
}

// unreachableHeaders are valid tokens that never reach a handler's
// r.Header: net/http removes Host and Transfer-Encoding and rewrites
// Content-Length; a proxy drops the hop-by-hop ones (RFC 9110 7.6.1).
var unreachableHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true,
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Te": true,
	"Trailer": true, "Upgrade": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
}

// validToken reports whether s is an RFC 9110 token, the grammar of a
// header field name (the rule net/http applies to incoming names).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// checkTrust is the trusted-proxy interlock: header and host are
// client-controlled unless a proxy sets them.
func (c Config) checkTrust() error {
	var sources []string
	if !c.HeaderOff {
		sources = append(sources, "the "+c.headerName()+" header")
	}
	if c.Host != nil {
		sources = append(sources, "the Host label")
	}
	return TrustInterlock("tenanthttp", c.TrustedProxy,
		"deploy behind a proxy that sets the header and strips the client's and set Config.TrustedProxy, or set Config.HeaderOff (and no Host) and resolve the tenant from an authenticated Claim",
		sources...)
}

// TrustInterlock is the trusted-proxy interlock every boundary applies:
// sources names the client-settable tenant sources in use ("the
// X-Tenant-ID header"). With any in use and no trusted proxy asserted, it
// refuses with trusted_proxy_required for module, with fix; otherwise nil.
func TrustInterlock(module string, trusted bool, fix string, sources ...string) error {
	if trusted || len(sources) == 0 {
		return nil
	}
	return &tenancy.Error{
		Code:   tenancy.CodeTrustedProxyRequired,
		Module: module,
		Detail: "the tenant is resolved from " + strings.Join(sources, " and ") + ", which any client can set, and no trusted proxy is asserted",
		Fix:    fix,
	}
}

// Class is a route's surface class. The zero value is unclassified, which
// refuses to boot.
type Class uint8

const (
	// Tenant routes are served on the tenant listener with the request's
	// tenant bound in its context.
	Tenant Class = iota + 1
	// Operator routes describe the whole deployment (metrics, status, the
	// tenancy matrix); they are served only on the operator listener and
	// answer 404 on the tenant listener.
	Operator
	// Blocked routes are declared never to be served: 404 on both listeners.
	Blocked
)

func (c Class) String() string {
	switch c {
	case Tenant:
		return "tenant"
	case Operator:
		return "operator"
	case Blocked:
		return "blocked"
	}
	return "unclassified"
}

func (c Class) valid() bool { return c >= Tenant && c <= Blocked }
