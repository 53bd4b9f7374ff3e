package tenanthttp

import (
	"context"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// The outgoing refusals, shared values like the request-time ones.
var (
	errOutgoingUnbound = &tenancy.Error{
		Code:   tenancy.CodeTenantUnbound,
		Detail: "an outgoing call would leave with no tenant: its context has none bound and is not marked tenant-global",
		Fix:    "make the call under the context the boundary bound (the handler's own), or mark a deployment-wide call with tenancy.WithGlobal",
	}
	errOutgoingConflict = &tenancy.Error{
		Code:   tenancy.CodeTenantSourceConflict,
		Detail: "an outgoing call carries a tenant value set by hand that is not the tenant of its context (or the call is tenant-global)",
		Fix:    "do not set the tenant header or metadata key by hand: the transport or interceptor sets it from the context",
	}
)

// OutgoingTenant is the value an outgoing call carries under the tenant
// header (or gRPC metadata key): the tenant bound to ctx, or "" (send
// none) when ctx is tenant-global (tenancy.WithGlobal). A call with
// neither is refused with tenant_unbound before anything is sent: it never
// leaves as the default tenant. existing holds the values the caller set
// under that name by hand; unless they are absent, blank or name exactly
// the tenant to send, the call is refused with tenant_source_conflict.
// Transport and tenantgrpc's client interceptors apply this one rule.
func OutgoingTenant(ctx context.Context, existing []string) (string, error) {
	id, bound := tenancy.FromContext(ctx)
	if !bound && !tenancy.IsGlobal(ctx) {
		return "", errOutgoingUnbound
	}
	if len(existing) > 0 {
		// id is zero unless bound, so a tenant set by hand on a
		// tenant-global call is refused too.
		set, named, err := ParseHeader(existing)
		if err != nil || named && set != id {
			return "", errOutgoingConflict
		}
	}
	if !bound {
		return "", nil
	}
	return id.String(), nil
}

// Transport is an http.RoundTripper that carries the tenant bound to each
// request's context in the tenant header, by OutgoingTenant's rule: a
// request under a tenant-global context leaves without the header, and one
// under neither is refused with tenant_unbound before it is sent. A
// service that calls another tenantwire service wraps its client's
// transport in it, and the callee's boundary binds the same tenant.
//
// The header goes only to the scheme and host the caller's request named:
// a redirect hop to any other scheme or host leaves without it, whatever
// spelling of it the caller set, as net/http drops Authorization. Every
// spelling of the header name set by hand is seen (header keys compare
// case-insensitively), so none bypasses the rule.
type Transport struct {
	// Base sends the request; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Header names the tenant header; "" means X-Tenant-ID. A name no
	// request can carry (HeaderNameFault) refuses every request with
	// tenant_source_invalid.
	Header string
}

// RoundTrip sends a copy of req with the tenant header set, or refuses.
// req itself is not modified.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	name := t.Header
	if name == "" {
		name = DefaultHeader
	}
	if why := HeaderNameFault(name); why != "" {
		closeBody(req)
		return nil, &tenancy.Error{
			Code:   tenancy.CodeTenantSourceInvalid,
			Module: "tenanthttp",
			Detail: fmt.Sprintf("the outgoing tenant header name %q %s", name, why),
			Fix:    "set Transport.Header to the header name the called service reads, such as X-Tenant-ID",
		}
	}
	key := textproto.CanonicalMIMEHeaderKey(name)
	// Every key that names the header, in any spelling: http.Header is a
	// plain map, so req.Header["x-tenant-id"] set by hand is not under key,
	// and net/http would send it as it is.
	var existing []string
	var spelled []string
	for k, vs := range req.Header {
		if strings.EqualFold(k, name) {
			existing = append(existing, vs...)
			spelled = append(spelled, k)
		}
	}
	v, err := OutgoingTenant(req.Context(), existing)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	out := req.WithContext(req.Context())
	out.Header = req.Header.Clone()
	if out.Header == nil {
		out.Header = http.Header{}
	}
	for _, k := range spelled {
		delete(out.Header, k)
	}
	if v != "" && toFirstOrigin(req) {
		out.Header[key] = []string{v}
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(out)
	if resp != nil && resp.Request == nil {
		// The next hop finds the first request through it (toFirstOrigin).
		resp.Request = out
	}
	return resp, err
}

// toFirstOrigin reports whether req goes to the scheme and host of the
// request the caller sent. A RoundTripper sees each redirect hop as a new
// request, with the same context; net/http links each hop to the response
// that caused it (Request.Response), and that response to the hop before
// (Response.Request), so the chain leads back to the caller's request. A
// chain that breaks before reaching it is not the same origin.
func toFirstOrigin(req *http.Request) bool {
	first := req
	for first.Response != nil {
		if first.Response.Request == nil || first.Response.Request.URL == nil {
			return false
		}
		first = first.Response.Request
	}
	return first == req || strings.EqualFold(first.URL.Scheme, req.URL.Scheme) && strings.EqualFold(first.URL.Host, req.URL.Host)
}

// closeBody honours the RoundTripper contract on a refusal: the body is
// closed even though nothing was sent.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
