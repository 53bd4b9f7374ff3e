package postgres

import (
	"reflect"

	"github.com/tenantwire/tenantwire/floors"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// checkName refuses route's wiring when s is no valid identifier of at
// most limit bytes.
func (c *config) checkName(route, s string, limit int, fix string) {
	if err := validName(s, limit); err != nil {
		c.errs = append(c.errs, rules.WiringInvalid(c.name, route, err.Error(), fix))
	}
}

// tableSpec starts the spec of a route of type R over one table, whose
// name must leave room for suffix (what the route names after it).
func tableSpec[R any](c *config, name string, kind floors.Kind, aware bool, table naming.Name, suffix, fix string) *routeSpec {
	spec := &routeSpec{name: name, kind: kind, tenantAware: aware, typ: reflect.TypeFor[R](),
		rels: []roleRel{{"table", table}}}
	c.checkName(name, table.Base(), maxIdent-len(suffix), fix)
	return spec
}

// tableObject is the object of a route over one table; initStatic builds
// its statement set when one serves every tenant (see staticSet).
type tableObject interface{ initStatic() }

// addTableRoute adds a route over one table of columns keyed by key,
// tagged or not as the rules decide (counter, inbox, idempotency store).
// newRoute builds the route object, whose statements are then readied.
func addTableRoute[R tableObject](c *config, name string, kind floors.Kind, aware bool, table naming.Name, fix, columns, key string,
	newRoute func(r route) R) {
	spec := tableSpec[R](c, name, kind, aware, table, "", fix)
	spec.ddl = func(cl *Client, tenant tenancy.ID) []string {
		s := sql{tagged: spec.decision.Tagged}
		return []string{"CREATE TABLE IF NOT EXISTS " + route{cl, spec}.qualified(table, tenant) + " (" + s.tenantColumn() + columns + s.key(key) + ")"}
	}
	build := func(cl *Client) R {
		x := newRoute(route{cl, spec})
		x.initStatic()
		return x
	}
	spec.provide = provideRoute(build)
	spec.object = func(cl *Client) any { return build(cl) }
	c.routes = append(c.routes, spec)
}
