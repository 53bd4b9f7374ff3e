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

	"github.com/tenantwire/tenantwire/tenancy"
)

// RouteDef is one route registered with the module: a net/http ServeMux
// pattern ("GET /orders/{id}"), its surface class and its handler.
type RouteDef struct {
	Pattern string
	Class   Class
	Handler http.Handler
}

type routeOut struct {
	fx.Out
	Route RouteDef `group:"tenanthttp_routes"`
}

// Route registers a route with the module. Every route must be classified:
// the zero Class is refused with route_unclassified during fx.New. A
// Blocked route's handler is never called and may be nil.
func Route(pattern string, class Class, h http.Handler) fx.Option {
	d := RouteDef{Pattern: pattern, Class: class, Handler: h}
	return fx.Provide(func() routeOut { return routeOut{Route: d} })
}

// RouteWith registers a route whose handler is built from the graph: deps
// is any type fx can supply, including an fx.In struct.
func RouteWith[D any](pattern string, class Class, build func(deps D) http.Handler) fx.Option {
	return fx.Provide(func(deps D) routeOut {
		return routeOut{Route: RouteDef{Pattern: pattern, Class: class, Handler: build(deps)}}
	})
}

// muxes are the two routers built from the classified routes.
type muxes struct {
	tenant, operator *http.ServeMux
}

var notFound = http.NotFoundHandler()

// buildMuxes classifies every route onto the listeners. Tenant routes get
// the resolver in front; operator routes are served on the operator
// listener and shadowed by a 404 on the tenant listener, so a tenant
// catch-all can never answer for them; blocked routes are shadowed on both.
func buildMuxes(routes []RouteDef, res *Resolver) (muxes, error) {
	routes = slices.Clone(routes)
	slices.SortStableFunc(routes, func(a, b RouteDef) int { return cmp.Compare(a.Pattern, b.Pattern) })
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
			errs = append(errs, routeInvalid(r.Pattern, "the route has a nil handler"))
		}
	}
	if len(errs) > 0 {
		return muxes{}, errors.Join(errs...)
	}
	m := muxes{tenant: http.NewServeMux(), operator: http.NewServeMux()}
	// Shadows match any method, so that a tenant catch-all cannot answer
	// "POST /healthz" either; several routes may share one shadow.
	tenantShadows, operatorShadows := map[string]bool{}, map[string]bool{}
	for _, r := range routes {
		switch r.Class {
		case Tenant:
			errs = append(errs, handle(m.tenant, r.Pattern, res.Middleware(r.Handler)))
		case Operator:
			errs = append(errs, handle(m.operator, r.Pattern, r.Handler))
			tenantShadows[anyMethod(r.Pattern)] = true
		case Blocked:
			tenantShadows[anyMethod(r.Pattern)] = true
			operatorShadows[anyMethod(r.Pattern)] = true
		}
	}
	// A method-specific tenant route would outrank a shadow; one path
	// belongs to one class.
	for _, r := range routes {
		if r.Class == Tenant && tenantShadows[anyMethod(r.Pattern)] {
			errs = append(errs, routeInvalid(r.Pattern, "the path "+anyMethod(r.Pattern)+" is also an operator or blocked route"))
			delete(tenantShadows, anyMethod(r.Pattern))
		}
	}
	for _, sh := range []struct {
		mux *http.ServeMux
		set map[string]bool
	}{{m.tenant, tenantShadows}, {m.operator, operatorShadows}} {
		for _, p := range slices.Sorted(maps.Keys(sh.set)) {
			errs = append(errs, handle(sh.mux, p, notFound))
		}
	}
	return m, errors.Join(errs...)
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
			err = routeInvalid(pattern, fmt.Sprint(p))
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

func routeInvalid(pattern, detail string) error {
	return &tenancy.Error{
		Code:   tenancy.CodeRouteInvalid,
		Module: "tenanthttp",
		Route:  pattern,
		Detail: detail,
		Fix:    "fix the pattern, or give each route a distinct pattern (the operator listener already serves GET /healthz and GET /tenancy/matrix)",
	}
}
