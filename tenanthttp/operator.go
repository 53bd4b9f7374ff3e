package tenanthttp

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// loopbackHosts are the names the operator listener answers when
// Config.OperatorHosts is empty.
var loopbackHosts = []string{"localhost", "127.0.0.1", "[::1]"}

// hostRule is one entry of Config.OperatorHosts: a name, and the port it
// must come with ("" for the listener's own port or none).
type hostRule struct{ name, port string }

// operatorHostNames is Config.OperatorHosts, or the loopback names when
// it is empty.
func (c Config) operatorHostNames() []string {
	if len(c.OperatorHosts) == 0 {
		return loopbackHosts
	}
	return c.OperatorHosts
}

// operatorHosts reads operatorHostNames.
func (c Config) operatorHosts() ([]hostRule, error) {
	hosts := c.operatorHostNames()
	out := make([]hostRule, 0, len(hosts))
	for _, h := range hosts {
		name, port, ok := splitHost(h)
		if !ok || name == "" || strings.ContainsAny(name, "/@?#*[] \t") {
			return nil, &tenancy.Error{
				Code: tenancy.CodeOperatorHostsInvalid, Module: "tenanthttp",
				Detail: fmt.Sprintf("Config.OperatorHosts entry %q is not a host name or host:port", h),
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

// operatorGuard refuses, before any operator handler runs, what a web page
// can make a browser send: a Host the listener is not configured for (a
// page that rebinds its own DNS name to 127.0.0.1 sends its own name) and
// a cross-site Origin or Sec-Fetch-Site. Loopback alone keeps no browser
// out: the page runs on the operator's machine.
type operatorGuard struct {
	hosts []hostRule
	next  http.Handler
}

func (g operatorGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if detail, fix := g.refusal(r); detail != "" {
		body, _ := json.Marshal(struct {
			Error string `json:"error"`
			Code  string `json:"code"`
			Fix   string `json:"fix"`
		}{detail + "; nothing was served", string(tenancy.CodeOperatorRequestForbidden), fix})
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusForbidden, string(body)+"\n")
		return
	}
	g.next.ServeHTTP(w, r)
}

// fromCommand is the fix of a request a browser sent.
const fromCommand = "send operator requests from a command (curl, a Prometheus scrape, tenantadmin.Run), never from a web page"

// refusal says why r is refused and what to do, or "" when it is not.
func (g operatorGuard) refusal(r *http.Request) (detail, fix string) {
	if !g.hostAllowed(r) {
		return fmt.Sprintf("the request's Host %q is none the operator listener answers (a DNS-rebinding page reaches a local listener by a name of its own)", r.Host),
			"reach the listener by one of its names (localhost, 127.0.0.1, [::1] by default, with no port or the listener's own), or list the name in tenanthttp.Config.OperatorHosts"
	}
	if o, set := r.Header["Origin"]; set && (len(o) != 1 || !sameOrigin(o[0], r.Host)) {
		return fmt.Sprintf("the request comes from the web page at Origin %q, another site", strings.Join(o, ", ")), fromCommand
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return "the browser says the request is " + strconv.Quote(s) + " (Sec-Fetch-Site)", fromCommand
	}
	return "", ""
}

// hostAllowed reports whether r's Host is one of the configured names,
// with no port, the listener's own port, or the port its entry names.
func (g operatorGuard) hostAllowed(r *http.Request) bool {
	name, port, ok := splitHost(r.Host)
	if !ok || name == "" {
		return false
	}
	local := ""
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		_, local, _ = net.SplitHostPort(la.String())
	}
	return slices.ContainsFunc(g.hosts, func(h hostRule) bool {
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
