package postgres

import (
	"context"
	"reflect"

	"github.com/tenantwire/tenantwire/tenancy"
)

// HubSearchConfig wires a hub search: full-text search over one hub table
// (id, body and a generated tsvector, with its GIN index). A hub never
// reaches namespace: tenant-aware → tagged, routed →
// dedicated, otherwise none. A per-tenant Table is allowed (each tenant's
// schema holds its own hub) but is rated as the hub rule says, not higher.
type HubSearchConfig struct {
	TenantAware bool
	Table       Relation
	// Config is the text search configuration (default "simple").
	Config string
}

// HubSearchRoute adds a hub search route and provides *HubSearch under its
// name. FederatedSearch searches name it as a leg.
func HubSearchRoute(name string, hc HubSearchConfig) Option {
	if hc.Config == "" {
		hc.Config = "simple"
	}
	return func(c *config) {
		sc := SearchConfig{TenantAware: hc.TenantAware, Read: hc.Table, Heap: hc.Table,
			Index: Relation{table: hc.Table.table + "_tsv", perTenant: hc.Table.perTenant}, Config: hc.Config}
		spec := &routeSpec{name: name, kind: KindHubSearch, tenantAware: hc.TenantAware, typ: reflect.TypeFor[*HubSearch](),
			rels: []roleRel{{"hub", hc.Table}}}
		if err := validName(hc.Table.table, maxIdent-len("_tsv")); err != nil {
			c.errs = append(c.errs, Rules.WiringInvalid(c.name, name, err.Error(), "name the hub table"))
		}
		if err := validName(hc.Config, maxIdent); err != nil {
			c.errs = append(c.errs, Rules.WiringInvalid(c.name, name, err.Error(), "name a text search configuration"))
		}
		// The DDL and statements are a search route's over one table.
		spec.ddl = func(cl *Client, tenant tenancy.ID) []string { return searchDDL(route{cl, spec}, sc, tenant) }
		spec.provide = provideRoute(func(cl *Client) *HubSearch {
			x := &Search{route: route{cl, spec}, cfg: sc}
			if !x.perTenant() {
				x.static = x.build(tenancy.ID{})
			}
			return &HubSearch{x}
		})
		c.routes = append(c.routes, spec)
		c.hubs = append(c.hubs, hubLeg{name: name, cfg: hc})
	}
}

// HubSearch is a hub search route: Put, Remove, Search and Count as on
// a search route, each over the bound tenant's rows when tenant-scoped.
type HubSearch struct{ s *Search }

// Put indexes body under id.
func (h *HubSearch) Put(ctx context.Context, id, body string) error { return h.s.Put(ctx, id, body) }

// Remove drops id from the index.
func (h *HubSearch) Remove(ctx context.Context, id string) error { return h.s.Remove(ctx, id) }

// Search returns the best hits for a web-search style query.
func (h *HubSearch) Search(ctx context.Context, query string, limit int) ([]Hit, error) {
	return h.s.Search(ctx, query, limit)
}

// Count returns how many documents match query.
func (h *HubSearch) Count(ctx context.Context, query string) (int, error) {
	return h.s.Count(ctx, query)
}

// hubLeg is what a federated search needs of a hub.
type hubLeg struct {
	name string
	cfg  HubSearchConfig
}
