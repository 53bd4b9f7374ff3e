package postgres

import (
	"reflect"

	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
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
	return modules.Own(func(c *config) {
		sc := SearchConfig{TenantAware: hc.TenantAware, Read: hc.Table, Heap: hc.Table,
			Index: nameOf(hc.Table.Base()+"_tsv", hc.Table.PerTenant()), Config: hc.Config}
		spec := &routeSpec{name: name, kind: kindHubSearch, tenantAware: hc.TenantAware, typ: reflect.TypeFor[*Search](),
			rels: []roleRel{{"hub", hc.Table}}}
		c.checkName(name, hc.Table.Base(), maxIdent-len("_tsv"), "name the hub table")
		// The DDL and statements are a search route's over one table.
		c.addSearch(spec, sc)
		c.hubs = append(c.hubs, hubLeg{name: name, cfg: hc})
	})
}

// hubLeg is what a federated search needs of a hub.
type hubLeg struct {
	name string
	cfg  HubSearchConfig
}
