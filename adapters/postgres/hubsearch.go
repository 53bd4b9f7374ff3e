package postgres

import (
	"reflect"

	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/tenancy"
)

// HubSearchConfig wires a hub search: full-text search over one hub table
// (id, body and a generated tsvector, with its GIN index). A hub never
// reaches namespace: tenant-aware → tagged, routed →
// dedicated, otherwise none. A per-tenant Table is allowed (each tenant's
// schema holds its own hub) but is rated as the hub rule says, not higher.
type HubSearchConfig struct {
	TenantAware bool
	Table       naming.Name
	// Config is the text search configuration (default "simple").
	Config string
}

// HubSearchRoute adds a hub search route and provides it as a *Search under
// its name: the same Put, Remove, Search and Count, each over the bound
// tenant's rows when tenant-scoped. FederatedSearch searches name it as a
// leg.
func HubSearchRoute(name string, hc HubSearchConfig) Option {
	if hc.Config == "" {
		hc.Config = "simple"
	}
	return func(c *config) {
		sc := SearchConfig{TenantAware: hc.TenantAware, Read: hc.Table, Heap: hc.Table,
			Index: nameOf(hc.Table.Base()+"_tsv", hc.Table.PerTenant()), Config: hc.Config}
		spec := &routeSpec{name: name, kind: kindHubSearch, tenantAware: hc.TenantAware, typ: reflect.TypeFor[*Search](),
			rels: []roleRel{{"hub", hc.Table}}}
		if err := validName(hc.Table.Base(), maxIdent-len("_tsv")); err != nil {
			c.errs = append(c.errs, rules.WiringInvalid(c.name, name, err.Error(), "name the hub table"))
		}
		if err := validName(hc.Config, maxIdent); err != nil {
			c.errs = append(c.errs, rules.WiringInvalid(c.name, name, err.Error(), "name a text search configuration"))
		}
		// The DDL and statements are a search route's over one table.
		spec.ddl = func(cl *Client, tenant tenancy.ID) []string { return searchDDL(route{cl, spec}, sc, tenant) }
		spec.provide = provideRoute(func(cl *Client) *Search {
			x := &Search{route: route{cl, spec}, cfg: sc}
			if !x.perTenant() {
				x.static = x.build(tenancy.ID{})
			}
			return x
		})
		c.routes = append(c.routes, spec)
		c.hubs = append(c.hubs, hubLeg{name: name, cfg: hc})
	}
}

// hubLeg is what a federated search needs of a hub.
type hubLeg struct {
	name string
	cfg  HubSearchConfig
}
