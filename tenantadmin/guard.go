package tenantadmin

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// loopbackHosts are the Host names the endpoints answer when Config.Hosts
// is empty.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// maxBody bounds what the guard reads of a request body: an empty body or
// "{}" is all it accepts.
const maxBody = 64

// hostRule is one entry of Config.Hosts: a name, and the port it must come
// with ("" for the listener's own port or none).
type hostRule struct{ name, port string }

// hostRules reads Config.Hosts (the loopback names when empty).
func hostRules(hosts []string) ([]hostRule, error) {
	if len(hosts) == 0 {
		hosts = loopbackHosts
	}
	out := make([]hostRule, 0, len(hosts))
	for _, h := range hosts {
		name, port, ok := splitHost(h)
		if !ok || name == "" || strings.ContainsAny(name, "/@?#* ") {
			return nil, &tenancy.Error{
				Code: tenancy.CodeTenantAdminUnwired, Module: "tenantadmin",
				Detail: fmt.Sprintf("Config.Hosts entry %q is not a host name or host:port", h),
				Fix:    "list the names the operator listener is reached by, as a Host header carries them (ops.internal, ops.internal:443, [::1]), with no scheme or path",
			}
		}
		out = append(out, hostRule{name, port})
	}
	return out, nil
}

// splitHost splits a Host value into its lowercased name (an IPv6 address
// without brackets) and port.
func splitHost(h string) (name, port string, ok bool) {
	h = strings.ToLower(h)
	if strings.HasPrefix(h, "[") || strings.Count(h, ":") == 1 {
		if n, p, err := net.SplitHostPort(h); err == nil {
			if _, err := strconv.ParseUint(p, 10, 16); err != nil {
				return "", "", false
			}
			return n, p, true
		}
		if !strings.HasPrefix(h, "[") || !strings.HasSuffix(h, "]") {
			return "", "", false
		}
		return h[1 : len(h)-1], "", true
	}
	return h, "", true
}

// guard refuses, before any handler runs, what a web page could make a
// browser send: a Host the listener is not configured for (DNS
// rebinding), a cross-site Origin or Sec-Fetch-Site, an unauthenticated
// request when a Token or Authenticate is set, a state-changing request
// in a form a page can send without a CORS preflight, and any body that
// could carry parameters. It then reads the query strictly.
func (a *admin) guard(e endpoint, w http.ResponseWriter, r *http.Request) (query, bool) {
	if err := a.admit(e, r); err != nil {
		refuse(w, err)
		return nil, false
	}
	q, err := strictQuery(e, r.URL.RawQuery)
	if err != nil {
		refuse(w, err)
		return nil, false
	}
	return q, true
}

func (a *admin) admit(e endpoint, r *http.Request) error {
	route := e.pattern
	if !a.hostAllowed(r) {
		return forbidden(route, fmt.Sprintf("the request's Host %q is none the operator listener answers (a DNS-rebinding page reaches a local listener by a name of its own)", r.Host),
			"reach the listener by one of its names (localhost, 127.0.0.1, [::1] by default), or list the name in tenantadmin.Config.Hosts")
	}
	if o, set := r.Header["Origin"]; set && (len(o) != 1 || !sameOrigin(o[0], r.Host)) {
		return forbidden(route, fmt.Sprintf("the request comes from the web page at Origin %q, another site", strings.Join(o, ", ")),
			"send operator requests from a command (tenantadmin.Run, curl), never from a web page")
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return forbidden(route, "the browser says the request is "+strconv.Quote(s)+" (Sec-Fetch-Site)",
			"send operator requests from a command (tenantadmin.Run, curl), never from a web page")
	}
	if a.token != "" {
		// The scheme is case-insensitive (RFC 9110); the token is not.
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
			return forbidden(route, "the request carries no valid operator token",
				"send the token as \"Authorization: Bearer <token>\" (tenantadmin.Remote{Token: ...})")
		}
	}
	if a.authenticate != nil {
		if err := a.authenticate(r); err != nil {
			return forbidden(route, "Config.Authenticate refused the request: "+err.Error(), "authenticate as Config.Authenticate requires")
		}
	}
	if r.Method == http.MethodPost {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return forbidden(route, fmt.Sprintf("a state-changing request needs Content-Type application/json, which no HTML form or simple cross-site request can send; got %q", r.Header.Get("Content-Type")),
				"send the request with \"Content-Type: application/json\" and an empty body (or {}); parameters go in the query string")
		}
	}
	return emptyBody(route, r)
}

// emptyBody accepts no body, or on a POST the empty JSON object: a
// parameter sent in a body is refused, never ignored, so a dry run put
// there does not run for real.
func emptyBody(route string, r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return invalid(route, "the request body could not be read: "+err.Error())
	}
	if len(b) > maxBody {
		return invalid(route, "the request carries a body; operator endpoints take their parameters in the query string only")
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || (r.Method == http.MethodPost && string(b) == "{}") {
		return nil
	}
	return invalid(route, "the request carries a body; operator endpoints take their parameters in the query string only")
}

// hostAllowed reports whether r's Host is one of the configured names,
// with no port, the listener's own port, or the port its entry names.
func (a *admin) hostAllowed(r *http.Request) bool {
	name, port, ok := splitHost(r.Host)
	if !ok || name == "" {
		return false
	}
	local := ""
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		_, local, _ = net.SplitHostPort(la.String())
	}
	return slices.ContainsFunc(a.hosts, func(h hostRule) bool {
		if h.name != name {
			return false
		}
		if h.port != "" {
			return port == h.port
		}
		return port == "" || port == local
	})
}

// sameOrigin reports whether origin is http(s)://host exactly: the page
// was served by the listener itself under the name already checked.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Path == "" && u.RawQuery == "" &&
		u.User == nil && strings.EqualFold(u.Host, host)
}

func forbidden(route, detail, fix string) error {
	return &tenancy.Error{Code: tenancy.CodeOperatorRequestForbidden, Module: "tenantadmin", Route: route, Detail: detail + "; nothing was changed", Fix: fix}
}
