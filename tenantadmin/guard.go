package tenantadmin

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// maxBody bounds what the guard reads of a request body: an empty body or
// "{}" is all it accepts.
const maxBody = 64

// guard refuses, before any handler runs, an unauthenticated request when
// a Token or Authenticate is set, a state-changing request in a form a
// page can send without a CORS preflight, and any body that could carry
// parameters. It then reads the query strictly. A foreign Host, Origin or
// Sec-Fetch-Site never gets here: the operator listener refuses it before
// any operator handler (tenanthttp.Config.OperatorHosts).
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
	if e.body != "" {
		// An archive is read by the handler; its media type is none a
		// form or a simple cross-site request can send either.
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != e.body {
			return forbidden(route, fmt.Sprintf("the endpoint reads a body of Content-Type %s, which no HTML form or simple cross-site request can send; got %q", e.body, r.Header.Get("Content-Type")),
				"send the archive as the body with \"Content-Type: "+e.body+"\" (tenantadmin.Run import)")
		}
		return nil
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

func forbidden(route, detail, fix string) error {
	return &tenancy.Error{Code: tenancy.CodeOperatorRequestForbidden, Module: "tenantadmin", Route: route, Detail: detail + "; nothing was changed", Fix: fix}
}
