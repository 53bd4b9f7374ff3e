package tenantadmin

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// Endpoint names one operator endpoint, for Config.Off.
type Endpoint string

// The endpoints Module mounts.
const (
	List      Endpoint = "list"      // GET /tenants
	Status    Endpoint = "status"    // GET /tenants/{id}
	Provision Endpoint = "provision" // POST /tenants/{id}/provision
	Suspend   Endpoint = "suspend"   // POST /tenants/{id}/suspend
	Resume    Endpoint = "resume"    // POST /tenants/{id}/resume
	Offboard  Endpoint = "offboard"  // POST /tenants/{id}/offboard
	Top       Endpoint = "top"       // GET /tenants/top
	Export    Endpoint = "export"    // GET /tenants/{id}/export
	Import    Endpoint = "import"    // POST /tenants/{id}/import
	Move      Endpoint = "move"      // POST /tenants/{id}/move
	Cleanup   Endpoint = "cleanup"   // POST /tenants/{id}/cleanup
)

// endpoint is one mounted endpoint: its pattern, the query parameters it
// takes, and its handler.
type endpoint struct {
	name    Endpoint
	pattern string
	params  []string
	handle  func(*admin, http.ResponseWriter, *http.Request, query)
	// body is the media type of the body the endpoint reads (an
	// archive); "": it reads none.
	body string
}

var endpoints = []endpoint{
	{List, "GET /tenants", []string{"after", "limit"}, (*admin).list, ""},
	{Top, "GET /tenants/top", nil, (*admin).top, ""},
	{Status, "GET /tenants/{id}", nil, (*admin).status, ""},
	{Provision, "POST /tenants/{id}/provision", []string{"dry_run"}, (*admin).provision, ""},
	{Suspend, "POST /tenants/{id}/suspend", nil, (*admin).suspend, ""},
	{Resume, "POST /tenants/{id}/resume", nil, (*admin).resume, ""},
	{Offboard, "POST /tenants/{id}/offboard", []string{"dry_run", "confirm"}, (*admin).offboard, ""},
	{Export, "GET /tenants/{id}/export", nil, (*admin).export, ""},
	{Import, "POST /tenants/{id}/import", nil, (*admin).importArchive, ArchiveMediaType},
	{Move, "POST /tenants/{id}/move", []string{"module", "to", "dry_run"}, (*admin).move, ""},
	{Cleanup, "POST /tenants/{id}/cleanup", []string{"module", "from"}, (*admin).cleanupMove, ""},
}

// query is a request's parameters, each given exactly once.
type query map[string]string

// strictQuery reads raw completely or refuses it: every pair must be
// key=value with valid escapes and no ';' (which net/url drops with the
// pair), each key one the endpoint takes, spelt exactly, given once. A
// pair net/url would skip is refused instead, so a dry run it cannot read
// is never taken for a real run.
func strictQuery(e endpoint, raw string) (query, error) {
	q := query{}
	if raw == "" {
		return q, nil
	}
	for pair := range strings.SplitSeq(raw, "&") {
		k, v, hasEq := strings.Cut(pair, "=")
		key, kerr := url.QueryUnescape(k)
		val, verr := url.QueryUnescape(v)
		switch {
		case strings.Contains(pair, ";"):
			return nil, invalid(e.pattern, fmt.Sprintf("the query pair %q holds a ';'", pair))
		case !hasEq || kerr != nil || verr != nil || key == "":
			return nil, invalid(e.pattern, fmt.Sprintf("the query pair %q is not key=value with valid escapes", pair))
		case !slices.Contains(e.params, key):
			return nil, invalid(e.pattern, e.pattern+" takes no parameter "+strconv.Quote(key))
		}
		if _, dup := q[key]; dup {
			return nil, invalid(e.pattern, "the parameter "+strconv.Quote(key)+" is given twice")
		}
		q[key] = val
	}
	return q, nil
}

// dryRun reads dry_run: absent is a real run, "1" a dry run, and any other
// value is refused.
func dryRun(route string, q query) (bool, error) {
	v, set := q["dry_run"]
	if !set {
		return false, nil
	}
	if v != "1" {
		return false, invalid(route, fmt.Sprintf("dry_run %q is not 1 (the only value a dry run takes; leave dry_run out for a real run)", v))
	}
	return true, nil
}

// mounted is the endpoints Config.Off leaves on.
func mounted(off []Endpoint) ([]endpoint, error) {
	for _, o := range off {
		if !slices.ContainsFunc(endpoints, func(e endpoint) bool { return e.name == o }) {
			return nil, &tenancy.Error{
				Code: tenancy.CodeTenantAdminUnwired, Module: "tenantadmin",
				Detail: fmt.Sprintf("Config.Off names %q, which is no endpoint", o),
				Fix:    "name endpoints with tenantadmin.List, Status, Provision, Suspend, Resume or Offboard",
			}
		}
	}
	return slices.DeleteFunc(slices.Clone(endpoints), func(e endpoint) bool { return slices.Contains(off, e.name) }), nil
}
