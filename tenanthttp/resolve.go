// Package tenanthttp is the HTTP boundary of a tenantwire service: it
// resolves the tenant of each request once (header, host label, claim of
// the authenticated principal), binds it into the request context for the
// adapters, refuses to boot header mode without a trusted proxy, and serves
// every registered route on the listener its surface class allows.
package tenanthttp

import (
	"errors"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// DefaultHeader is the tenant header's name when Config.Header is empty.
const DefaultHeader = "X-Tenant-ID"

// The request-time refusals are shared values so that resolving never
// allocates, even on the refusal path. Compare with errors.Is against the
// code; do not mutate them.
var (
	ErrInvalidHeader = &tenancy.Error{
		Code:   tenancy.CodeInvalidTenantHeader,
		Detail: "the tenant header is neither blank nor a canonical 8-4-4-4-12 hex UUID",
		Fix:    "send a canonical UUID, or omit the header to use the default tenant",
	}
	ErrSourceConflict = &tenancy.Error{
		Code:   tenancy.CodeTenantSourceConflict,
		Detail: "two tenant sources of the request (claim, header, host label) name different tenants",
		Fix:    "send only the tenant the caller is entitled to",
	}
	ErrTenantRequired = &tenancy.Error{
		Code:   tenancy.CodeTenantRequired,
		Detail: "the boundary requires a tenant and the request names none (no claim, header or host label)",
		Fix:    "send the tenant the caller is entitled to",
	}
	ErrHostAmbiguous = &tenancy.Error{
		Code:   tenancy.CodeTenantHostAmbiguous,
		Detail: "host mode is on and the request line carries an absolute-form target, whose host replaces the Host header the proxy set",
		Fix:    "send the request target in origin form (GET /path) with the tenant's host in the Host header",
	}
)

// ParseHeader applies the header table (docs/http.md) to the values of the
// tenant header (as in http.Header). It reports the tenant the header names
// (named is false when the header is absent or blank, and the result is
// then the default tenant), or ErrInvalidHeader. Several values are refused:
// a proxy that sets the header strips the client's, so two values mean it
// did not. It does not allocate.
func ParseHeader(values []string) (id tenancy.ID, named bool, err error) {
	switch len(values) {
	case 0:
		return tenancy.Default, false, nil
	case 1:
	default:
		return tenancy.ID{}, false, ErrInvalidHeader
	}
	v := values[0]
	if blank(v) {
		return tenancy.Default, false, nil
	}
	id, perr := tenancy.ParseID(v)
	if perr != nil {
		// Includes the nil UUID: it has the canonical shape but is no tenant.
		return tenancy.ID{}, false, ErrInvalidHeader
	}
	return id, true, nil
}

// blank reports whether a header value is empty or only ASCII whitespace
// (the table's "present but empty or whitespace" row). Other Unicode
// spaces are not blank: such a value is malformed, not absent.
func blank(v string) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case ' ', '\t', '\r', '\n', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

// hostLabel returns the first DNS label of a Host header value, lowercased,
// without its port; "" for an IPv6 literal or an empty host. It allocates
// only when the label has upper-case letters.
func hostLabel(host string) string {
	if host == "" || host[0] == '[' {
		return ""
	}
	if i := strings.IndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	if i := strings.IndexByte(host, '.'); i >= 0 {
		host = host[:i]
	}
	return strings.ToLower(host)
}

// Resolver resolves the tenant of a request. Build it with NewResolver,
// which enforces the trusted-proxy interlock.
type Resolver struct {
	header string // canonical MIME form, so lookups skip canonicalisation
	useHdr bool
	// require refuses a request no source names a tenant for.
	require bool
	host    func(label string) (tenancy.ID, bool)
	claim   func(*http.Request) (tenancy.ID, bool)
	// tel puts the tenant on the request's span (nil: no telemetry).
	tel *telemetry.Telemetry
	// adm admits the request for its tenant (nil: every request).
	adm *Admission
}

// NewResolver builds the resolver cfg describes. Header or host mode
// without cfg.TrustedProxy is refused with trusted_proxy_required: both are
// client-controlled unless a proxy sets them. Admission limits that cannot
// be enforced are refused with tenant_limits_invalid.
func NewResolver(cfg Config) (*Resolver, error) {
	if err := errors.Join(cfg.check(), cfg.Admission.Check("tenanthttp")); err != nil {
		return nil, err
	}
	return &Resolver{
		header:  textproto.CanonicalMIMEHeaderKey(cfg.headerName()),
		useHdr:  !cfg.HeaderOff,
		require: cfg.RequireTenant,
		host:    cfg.Host,
		claim:   cfg.Claim,
		adm:     cfg.Admission,
	}, nil
}

// Resolve returns the request's tenant. Sources: the claim of the
// authenticated principal (Config.Claim), the tenant header, the host label
// (Config.Host). Every source that names a tenant must name the same one,
// or the request is refused with ErrSourceConflict; when none names one,
// the result is the default tenant (the header table's "absent" row), or
// ErrTenantRequired with Config.RequireTenant. A
// malformed header is ErrInvalidHeader. In host mode an absolute-form
// request target is ErrHostAmbiguous. It allocates nothing beyond what the
// user's Host and Claim functions do.
func (res *Resolver) Resolve(r *http.Request) (tenancy.ID, error) {
	if res.host != nil && absoluteForm(r) {
		return tenancy.ID{}, ErrHostAmbiguous
	}
	var claim, host tenancy.ID
	if res.claim != nil {
		if id, ok := res.claim(r); ok {
			claim = id
		}
	}
	var header []string
	if res.useHdr {
		header = r.Header[res.header]
	}
	if res.host != nil {
		if label := hostLabel(r.Host); label != "" {
			if id, ok := res.host(label); ok {
				host = id
			}
		}
	}
	return ResolveSources(claim, header, host, res.require)
}

// ResolveSources is the resolution rule of docs/http.md over sources
// already read, so that every boundary (this one, and tenantgrpc, which
// reads the same values from metadata) applies one rule: claim and host
// name a tenant unless zero; header holds the tenant header's values as
// received (ParseHeader's table). A malformed header is ErrInvalidHeader
// whatever the other sources say; two sources naming different tenants are
// ErrSourceConflict; when none names one, the result is the default tenant,
// or ErrTenantRequired with require. It does not allocate.
func ResolveSources(claim tenancy.ID, header []string, host tenancy.ID, require bool) (tenancy.ID, error) {
	hdr, named, err := ParseHeader(header)
	if err != nil {
		return tenancy.ID{}, err
	}
	got := claim
	if named {
		if !got.IsZero() && got != hdr {
			return tenancy.ID{}, ErrSourceConflict
		}
		got = hdr
	}
	if !host.IsZero() {
		if !got.IsZero() && got != host {
			return tenancy.ID{}, ErrSourceConflict
		}
		got = host
	}
	if got.IsZero() {
		if require {
			return tenancy.ID{}, ErrTenantRequired
		}
		return tenancy.Default, nil
	}
	return got, nil
}

// absoluteForm reports whether the request line's target was not a path
// ("GET http://b.example/x", "CONNECT b.example:443"). net/http then takes
// r.Host from the target and discards the Host header, so the label could
// be the client's while the proxy set (and checked) another Host. The
// Host header is gone by the time a handler runs, so the two cannot be
// compared: the request is refused instead. A request that no server read
// (RequestURI empty) has only r.Host.
func absoluteForm(r *http.Request) bool {
	return r.RequestURI != "" && r.RequestURI[0] != '/'
}

// Middleware binds the resolved tenant into the request context with
// tenancy.WithTenant, or answers the refusal (WriteError's body and
// status): 400 with a JSON body naming invalid_tenant_header for a
// malformed header, 403 with a JSON body naming
// tenant_source_conflict when sources disagree, 400 with a JSON body naming
// tenant_host_ambiguous for an absolute-form target in host mode, 400 with
// a JSON body naming tenant_required for a request that names no tenant
// when one is required. With Config.Admission, a request over its
// tenant's limits is then answered 429 with Retry-After
// (tenant_rate_limited, tenant_concurrency_limited) without running next.
func (res *Resolver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := res.Resolve(r)
		if err != nil {
			res.tel.Refused(r.Context(), err)
			refuse(w, err)
			return
		}
		ctx := tenancy.WithTenant(r.Context(), id)
		// Also on a nil Telemetry: it drops a caller's own BaggageTenant
		// member that the app's middleware may have extracted.
		ctx = res.tel.Bound(ctx, id)
		r = r.WithContext(ctx)
		if res.adm == nil {
			next.ServeHTTP(w, r)
			return
		}
		t, err := res.adm.Admit("tenanthttp", r.Pattern, id)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		defer t.Done()
		next.ServeHTTP(w, r)
	})
}

// refuse answers a resolver refusal as WriteError would, from bodies
// built once: StatusOf's status, Public's code and message.
func refuse(w http.ResponseWriter, err error) {
	body, ok := refusalBodies[err]
	if !ok {
		WriteError(w, nil, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(StatusOf(err))
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
