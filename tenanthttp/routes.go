package tenanthttp

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"go.uber.org/fx"

	"github.com/tenantwire/tenantwire/telemetry"
	"github.com/tenantwire/tenantwire/tenancy"
)

// routeDef is one route registered with the module: a net/http ServeMux
// pattern ("GET /orders/{id}"), its surface class and its handler.
type routeDef struct {
	Pattern string
	Class   Class
	Handler http.Handler
	// yields: a Blocked declaration that covers the route switches it off
	// instead of being refused (RouteWithYield).
	yields bool
}

type routeOut struct {
	fx.Out
	Route routeDef `group:"tenanthttp_routes"`
}

// Route registers a route with the module. Every route must be classified:
// the zero Class is refused with route_unclassified during fx.New. A
// Blocked route's handler is never called and may be nil.
func Route(pattern string, class Class, h http.Handler) fx.Option {
	d := routeDef{Pattern: pattern, Class: class, Handler: h}
	return fx.Provide(func() routeOut { return routeOut{Route: d} })
}

// RouteWith registers a route whose handler is built from the graph: deps
// is any type fx can supply, including an fx.In struct.
func RouteWith[D any](pattern string, class Class, build func(deps D) http.Handler) fx.Option {
	return fx.Provide(func(deps D) routeOut {
		return routeOut{Route: routeDef{Pattern: pattern, Class: class, Handler: build(deps)}}
	})
}

// RouteWithYield is RouteWith for a route a library mounts on the app's
// behalf (the tenantadmin endpoints): a Blocked declaration that matches
// every request the route matches switches it off, so declaring the path
// blocked is how an app turns the library's route off. A Blocked route
// that only partly overlaps it is still refused with route_class_overlap.
func RouteWithYield[D any](pattern string, class Class, build func(deps D) http.Handler) fx.Option {
	return fx.Provide(func(deps D) routeOut {
		return routeOut{Route: routeDef{Pattern: pattern, Class: class, Handler: build(deps), yields: true}}
	})
}

// withoutYielded drops every yielding route that a Blocked declaration
// covers whole.
func withoutYielded(routes []routeDef) []routeDef {
	var blocked []pattern
	for _, r := range routes {
		if r.Class == Blocked {
			if p, ok := parsePattern(anyMethod(r.Pattern)); ok {
				blocked = append(blocked, p)
			}
		}
	}
	return slices.DeleteFunc(routes, func(r routeDef) bool {
		if !r.yields || r.Class == Blocked {
			return false
		}
		p, ok := parsePattern(r.Pattern)
		return ok && slices.ContainsFunc(blocked, func(b pattern) bool { return covers(b, p) })
	})
}

// muxes are the two routers built from the classified routes.
type muxes struct {
	tenant, operator http.Handler
}

var notFound = http.NotFoundHandler()

// buildMuxes classifies every route onto the listeners. Tenant routes get
// the resolver in front; operator routes are served on the operator
// listener and shadowed by a 404 on the tenant listener, so a tenant
// catch-all can never answer for them; blocked routes are shadowed on both.
// A route that would answer a request a shadow of its listener matches is
// refused (route_class_overlap): the shadow must win every request it
// matches, which net/http guarantees only where it is the more specific.
func buildMuxes(routes []routeDef, res *Resolver) (muxes, error) {
	routes = slices.Clone(routes)
	slices.SortStableFunc(routes, func(a, b routeDef) int { return cmp.Compare(a.Pattern, b.Pattern) })
	if err := classified(routes); err != nil {
		return muxes{}, err
	}
	routes = withoutYielded(routes)
	// Every pattern through net/http first: it refuses bad patterns and
	// conflicts within a class, and what it accepts parsePattern reads.
	// Blocked routes are checked one by one: two declarations of one
	// blocked path (two libraries' debug handlers) are one shadow.
	tenant, operator := http.NewServeMux(), http.NewServeMux()
	var errs []error
	for _, r := range routes {
		switch r.Class {
		case Tenant:
			errs = append(errs, handle(tenant, r.Pattern, noted(res.Middleware(r.Handler))))
		case Operator:
			errs = append(errs, handle(operator, r.Pattern, noted(r.Handler)))
		case Blocked:
			errs = append(errs, handle(http.NewServeMux(), r.Pattern, notFound))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return muxes{}, err
	}
	// Shadows match any method, so that a tenant catch-all cannot answer
	// "POST /healthz" either; several routes may share one shadow.
	tenantShadows, operatorShadows := map[string]routeDef{}, map[string]routeDef{}
	for _, r := range routes {
		switch r.Class {
		case Operator:
			tenantShadows[anyMethod(r.Pattern)] = r
		case Blocked:
			tenantShadows[anyMethod(r.Pattern)] = r
			operatorShadows[anyMethod(r.Pattern)] = r
		}
	}
	if err := unshadowed(routes, tenantShadows, operatorShadows); err != nil {
		return muxes{}, err
	}
	errs = nil
	m := muxes{tenant: tenant, operator: operator}
	for _, sh := range []struct {
		mux  *http.ServeMux
		set  map[string]routeDef
		next *http.Handler
	}{{tenant, tenantShadows, &m.tenant}, {operator, operatorShadows, &m.operator}} {
		guard := http.NewServeMux()
		for _, p := range slices.Sorted(maps.Keys(sh.set)) {
			errs = append(errs, handle(sh.mux, p, notFound), handle(guard, p, notFound))
		}
		if len(sh.set) > 0 {
			*sh.next = decodedGuard{shadows: guard, next: *sh.next}
		}
	}
	return m, errors.Join(errs...)
}

// noted tells the request's span which pattern routed it (its
// http.route), even when a middleware in Config.Wrap copied the request.
func noted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		telemetry.NoteRoute(r)
		h.ServeHTTP(w, r)
	})
}

// classified refuses a route with no surface class, or with no handler
// where it is served.
func classified(routes []routeDef) error {
	var errs []error
	for _, r := range routes {
		switch {
		case !r.Class.valid():
			errs = append(errs, &tenancy.Error{
				Code:   tenancy.CodeRouteUnclassified,
				Module: "tenanthttp",
				Route:  r.Pattern,
				Detail: "the route has no surface class, so no listener may serve it",
				Fix:    "register it as tenanthttp.Tenant, tenanthttp.Operator or tenanthttp.Blocked",
			})
		case r.Class != Blocked && r.Handler == nil:
			errs = append(errs, routeInvalid(r.Pattern, "the route has a nil handler", "set the route's Handler"))
		}
	}
	return errors.Join(errs...)
}

// unshadowed refuses (route_class_overlap) a route that would answer a
// request a shadow of its own listener matches.
func unshadowed(routes []routeDef, tenantShadows, operatorShadows map[string]routeDef) error {
	type shadow struct {
		pattern
		of routeDef
	}
	parseAll := func(set map[string]routeDef) (out []shadow) {
		for _, sh := range slices.Sorted(maps.Keys(set)) {
			p, _ := parsePattern(sh)
			out = append(out, shadow{p, set[sh]})
		}
		return out
	}
	forTenant, forOperator := parseAll(tenantShadows), parseAll(operatorShadows)
	var errs []error
	for _, r := range routes {
		shadows := forTenant
		switch r.Class {
		case Operator:
			shadows = forOperator
		case Blocked:
			continue
		}
		rp, _ := parsePattern(r.Pattern)
		for _, sh := range shadows {
			if answersFor(rp, sh.pattern) {
				errs = append(errs, routeOverlap(r, sh.of))
			}
		}
	}
	return errors.Join(errs...)
}

// decodedGuard answers 404 for a request whose path, once percent-decoded,
// is a shadowed path. ServeMux splits the escaped path before decoding each
// segment, so /debug%2Fpprof/ is one segment to it and misses the /debug/
// shadow, while a handler reading r.URL.Path sees /debug/pprof/.
type decodedGuard struct {
	shadows *http.ServeMux
	next    http.Handler
}

func (g decodedGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// RawPath is set only when the escaped form differs from the default
	// encoding of Path, so ordinary requests skip the second lookup.
	if r.URL.RawPath != "" {
		u := *r.URL
		u.RawPath = ""
		r2 := *r
		r2.URL = &u
		if _, p := g.shadows.Handler(&r2); p != "" {
			notFound.ServeHTTP(w, r)
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

func routeOverlap(r, shadow routeDef) error {
	return &tenancy.Error{
		Code:   tenancy.CodeRouteClassOverlap,
		Module: "tenanthttp",
		Route:  r.Pattern,
		Detail: fmt.Sprintf("the %s route would answer requests that the %s route %q matches, which its listener must answer 404", r.Class, shadow.Class, shadow.Pattern),
		Fix:    fmt.Sprintf("give the %s route a path outside %q, reclassify one of the two routes, or drop one; a catch-all with no method and no host, such as \"/\", stays allowed", r.Class, anyMethod(shadow.Pattern)),
	}
}

// anyMethod drops the method of a ServeMux pattern ("GET /x" → "/x").
func anyMethod(pattern string) string {
	if i := strings.IndexAny(pattern, " \t"); i >= 0 && !strings.Contains(pattern[:i], "/") {
		return strings.TrimLeft(pattern[i:], " \t")
	}
	return pattern
}

// handle turns ServeMux's panic on a bad or conflicting pattern into a
// coded refusal.
func handle(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = routeInvalid(pattern, fmt.Sprint(p), patternFix)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// patternFix is what to change when net/http refuses a pattern.
const patternFix = "write the pattern as net/http's ServeMux takes it (\"[METHOD ][HOST]/[PATH]\", wildcards as {name} or {name...}) and " +
	"give it a path no other route of its class registers (the operator listener already serves GET /healthz, GET /readyz and GET /tenancy/matrix)"

func routeInvalid(pattern, detail, fix string) error {
	return &tenancy.Error{
		Code:   tenancy.CodeRouteInvalid,
		Module: "tenanthttp",
		Route:  pattern,
		Detail: detail,
		Fix:    fix,
	}
}
